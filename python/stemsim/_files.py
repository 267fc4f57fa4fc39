"""Files the package writes: made whole beside their final name, then published without ever
replacing a file unasked or writing through a link (as stemsim publishes its own outputs)."""
import os
import tempfile


def write_beside(path, fill, overwrite=False):
    """fill(tmp) writes the file's content to the path tmp, a temporary beside path; it then
    becomes path: replacing an existing file only with overwrite (FileExistsError otherwise,
    atomically: nothing is replaced), never through a symbolic link. Returns path."""
    path = os.fspath(path)
    if os.path.islink(path):
        raise FileExistsError("%s is a symbolic link: not written through it" % path)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".incomplete",
                               dir=os.path.dirname(os.path.abspath(path)))
    os.close(fd)
    try:
        fill(tmp)
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if path exists: nothing replaced
            os.unlink(tmp)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
