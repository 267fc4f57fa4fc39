"""Write stemsim configs from Python and run the stemsim program.

    cfg = stemsim.Config({"sample": {"xyz": "Si110.xyz", "tile_z": 2},
                          "simulation": {"frozen_phonons": 8, "thermal": True},
                          "output": {"file": "si.h5", "overwrite": True}})
    cfg["probe"]["C10"] = -50          # or cfg.set("probe.C10", -50)
    cfg.write("si.ini")
    cfg.dry_run()                      # stemsim --dry-run: raises StemsimError with the code on a bad config
    out = stemsim.run(cfg, ranks=4)    # mpirun -np 4 stemsim si.ini; the output's path

Config checks nothing itself: stemsim does (`dry_run`). Values are written as stemsim reads them:
True/False as true/false, lists and tuples space-separated, floats as plain decimals (no
exponent, 12 significant digits). Paths that stemsim resolves against the config file ([sample] xyz, [scan] positions,
[simulation] potential_file and smatrix_file) are written absolute (resolved against `base`:
the directory of the file a Config was read from, else the current directory), so the .ini may be
written anywhere; [output] file stays relative to the directory stemsim runs in.
"""
import configparser
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np

CONFIG_RELATIVE = {("sample", "xyz"), ("scan", "positions"), ("simulation", "potential_file"),
                   ("simulation", "smatrix_file")}

EXIT_CODES = {
    0: "success", 2: "bad command line", 3: "bad config key or value", 4: "bad or missing XYZ model or data file",
    5: "the plan needs more memory than allowed", 6: "the output file cannot be written", 7: "MPI failure",
    8: "GPU / CUDA failure", 9: "internal error", 75: "a checkpointed campaign was stopped: run it again to continue",
}


class StemsimError(RuntimeError):
    """stemsim exited with a non-zero code: .returncode, .message (its error lines), .output (all it printed),
    .command."""

    def __init__(self, returncode, message, output="", command=()):
        self.returncode, self.message, self.output, self.command = returncode, message, output, list(command)
        meaning = EXIT_CODES.get(returncode, "stopped by signal %d" % (returncode - 128) if returncode > 128 else "")
        super().__init__("stemsim exited with code %d%s: %s" % (returncode, " (%s)" % meaning if meaning else "",
                                                                 message))


def _value(v):
    if isinstance(v, bool) or isinstance(v, np.bool_):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)):
        return np.format_float_positional(float(v), precision=12, unique=False, fractional=False, trim="-")
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (list, tuple, np.ndarray)):
        return " ".join(_value(x) for x in v)
    return os.fspath(v) if hasattr(v, "__fspath__") else str(v)


def _parser():
    """configparser set to stemsim's dialect: keys keep their case, no interpolation (a '%' is a
    '%'), no DEFAULT section, '#' comments at the start of a line; a section given twice is one."""
    p = configparser.ConfigParser(interpolation=None, comment_prefixes=("#",), inline_comment_prefixes=None,
                                  strict=False, empty_lines_in_values=False, default_section=_NO_DEFAULT,
                                  delimiters=("=",))
    p.optionxform = str
    return p


_NO_DEFAULT = "\0no default section"  # stemsim has none: a [DEFAULT] is a section like any other


def _stemsim_comments(text):
    """stemsim's own rules, applied before configparser sees the text as stemsim applies them
    before inih (io/config.c): ';' starts a comment anywhere on a line, indentation is ignored
    (an indented line is never the continuation of a value)."""
    return "\n".join(line.split(";", 1)[0].strip() for line in text.splitlines()) + "\n"


class Config(dict):
    """A stemsim config.ini as {section: {key: value}} (a dict of dicts), read and written with
    Python's configparser in stemsim's dialect (docs/config.md): keys keep their case, ';'
    starts a comment anywhere on a line and '#' at its start, indentation is ignored.

    Values read from a file are strings; values set from Python may be numbers, booleans,
    lists or paths and are written as stemsim reads them (see the module's docstring).
    A missing section reads as an empty one (`cfg["probe"]["C10"] = -50` makes `[probe]`).

    Args:
        sections: {section: {key: value}} to start from.
        base: the directory against which the config's relative paths ([sample] xyz ...) are
            made absolute when written; default the current directory.
        **kw: more sections, as keyword arguments (sample={"xyz": "si.xyz"}).
    """

    def __init__(self, sections=None, base=None, **kw):
        super().__init__()
        self.base = os.path.abspath(base or os.getcwd())
        for sec, keys in dict(sections or {}, **kw).items():
            self[sec] = dict(keys)

    def __missing__(self, section):
        self[section] = {}
        return self[section]

    @classmethod
    def from_string(cls, text, base=None, source="<string>"):
        """A Config from the text of a config.ini (comments dropped). Raises ValueError for what
        stemsim refuses as syntax too: a key outside any [section], a line that is neither
        '[section]' nor 'key = value'."""
        parser = _parser()
        try:
            parser.read_string(_stemsim_comments(text), source=source)
        except configparser.MissingSectionHeaderError as err:
            raise ValueError("%s:%d: key outside any [section]: %s" % (source, err.lineno, err.line.strip())) \
                from None
        except configparser.ParsingError as err:
            line = err.errors[0][0] if getattr(err, "errors", None) else 0
            lines = text.splitlines()
            raise ValueError("%s:%d: syntax error (expected '[section]' or 'key = value'): %s"
                             % (source, line, lines[line - 1].strip() if 0 < line <= len(lines) else "")) from None
        cfg = cls(base=base)
        for sec in parser.sections():
            cfg[sec].update(parser.items(sec, raw=True))
        return cfg

    @classmethod
    def from_file(cls, path):
        """Read a config.ini (comments dropped); its directory becomes `base`. Raises ValueError
        as from_string does, naming the file."""
        with open(path) as fh:
            text = fh.read()
        return cls.from_string(text, base=os.path.dirname(os.path.abspath(path)), source=os.fspath(path))

    def set(self, key, value):
        """Set one value by its dotted name, `cfg.set("probe.C10", -50)`; returns the Config (calls chain)."""
        sec, k = key.split(".", 1)
        self[sec][k] = value
        return self

    def get_value(self, key, default=None):
        """One value by its dotted name (`cfg.get_value("probe.C10")`), else default."""
        sec, k = key.split(".", 1)
        return self.get(sec, {}).get(k, default)

    def copy(self):
        """A Config of copied sections (the same base)."""
        return Config({s: dict(k) for s, k in self.items()}, base=self.base)

    def text(self):
        """The config as the text of a config.ini (written by configparser). Raises ValueError for
        a value no config file can hold as given (a ';', a line break, spaces at its ends)."""
        parser = _parser()
        for sec, keys in self.items():
            parser.add_section(sec)
            for k, v in keys.items():
                if v is None:
                    continue
                s = _value(v)
                bad = [c for c in (";", "\n", "\r") if c in s]
                if bad or s != s.strip():
                    raise ValueError("[%s] %s = %r: a config file cannot hold this value (%s); stemsim would read "
                                     "another" % (sec, k, s, "';' starts a comment" if ";" in bad else
                                                  "a line break" if bad else "spaces at its ends are dropped"))
                if (sec, k) in CONFIG_RELATIVE and s and not os.path.isabs(s):
                    s = os.path.normpath(os.path.join(self.base, s))
                parser.set(sec, k, s)
        out = io.StringIO()
        parser.write(out)
        return out.getvalue()

    def write(self, path):
        """Write the .ini; returns its path."""
        with open(path, "w") as fh:
            fh.write(self.text())
        return os.fspath(path)

    @property
    def output(self):
        """[output] file (stemsim's default when not given)."""
        return _value(self.get("output", {}).get("file", "stemsim_output.h5"))

    def dry_run(self, stemsim=None, args=(), cwd=None):
        """stemsim --dry-run on this config: returns what it printed (the plan); raises StemsimError
        with stemsim's exit code and message when the run would fail."""
        return run(self, stemsim=stemsim, args=("--dry-run",) + tuple(args), cwd=cwd, dry_run=True)

    def __repr__(self):
        return "Config(%s)" % dict.__repr__(self)


def find_stemsim(stemsim=None):
    """The stemsim binary: the argument, $STEMSIM, or stemsim on PATH."""
    exe = stemsim or os.environ.get("STEMSIM") or shutil.which("stemsim")
    if not exe:
        raise FileNotFoundError("stemsim was not found: put it on PATH, set $STEMSIM or pass stemsim=PATH "
                                "(build it with cmake; see the README's Quick start)")
    return os.fspath(exe)


def _error_lines(text):
    lines = [ln for ln in text.splitlines() if "error" in ln.lower() or ln.startswith("stemsim:")]
    return "\n".join(lines[-8:]) if lines else "\n".join(text.strip().splitlines()[-8:])


_PROGRESS = (  # stemsim's own progress lines: (pattern, stage or None for the match's first group)
    (re.compile(r"^\s*(.+?):\s+(\d+)%\s+elapsed \d+ s\s+ETA (\d+) s"), None),
    (re.compile(r"^unit (\d+) of (\d+) done .*campaign ETA (\d+) s"), "units"),
    (re.compile(r"^configuration (\d+) of (\d+) done .*ETA (\d+) s"), "configurations"),
)


def _progress_of(line):
    """(stage, fraction done, ETA in seconds) from one of stemsim's progress lines, else None."""
    for pattern, stage in _PROGRESS:
        m = pattern.match(line)
        if not m:
            continue
        if stage is None:
            return m.group(1).strip(), int(m.group(2)) / 100.0, float(m.group(3))
        return stage, int(m.group(1)) / max(int(m.group(2)), 1), float(m.group(3))
    return None


def _print_progress(stage, fraction, eta):
    sys.stderr.write("\rstemsim: %s %3.0f%%, ETA %.0f s   " % (stage, 100 * fraction, eta))
    sys.stderr.flush()


def _stop(proc, grace=10):
    """SIGTERM (stemsim and mpirun stop cleanly, leaving no partial output), then SIGKILL."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait(proc, chunks, echo, timeout, cmd, progress=None):
    """stemsim's output into chunks (echoed; its progress lines to progress(stage, fraction, eta))
    until it ends; past timeout seconds it is stopped and subprocess.TimeoutExpired raised (its
    output so far attached)."""
    def pump():
        for line in proc.stdout:
            chunks.append(line)
            if echo:
                sys.stdout.write(line)
                sys.stdout.flush()
            got = _progress_of(line) if progress else None
            if got:
                progress(*got)
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        reader.join(5)
        raise subprocess.TimeoutExpired(cmd, timeout, output="".join(chunks)) from None
    except BaseException:  # KeyboardInterrupt in a notebook: stemsim does not run on alone
        _stop(proc)
        raise
    reader.join()
    return rc


def run(config, ranks=1, mpirun=None, srun=False, stemsim=None, args=(), mpi_args=(), cwd=None, env=None,
        echo=False, timeout=None, dry_run=False, ini=None, progress=None):
    """Run stemsim on a Config or on a config.ini path, and return the path of its output.

    With ranks > 1 or mpirun given, stemsim runs as `mpirun -np RANKS [mpi_args] stemsim ...`;
    with srun=True as `srun -n RANKS [mpi_args] stemsim ...` (inside an allocation); otherwise
    directly (one MPI rank, singleton start-up). stemsim is found by find_stemsim.

    Args:
        config: a Config (written to `ini`, default a temporary file) or a config.ini path.
        ranks: MPI ranks.
        mpirun: the launcher, a command name or list (default "mpirun" when ranks > 1).
        srun: launch with Slurm's srun instead.
        stemsim: the stemsim binary (default `$STEMSIM`, then PATH).
        args: more stemsim options, e.g. `["--set", "probe.C10=-50"]`.
        mpi_args: options for the launcher.
        cwd: the directory stemsim runs in (a relative [output] file lands there).
        env: its environment (default this process's).
        echo: print stemsim's output as it comes (in a notebook too).
        timeout: seconds; past them stemsim is stopped (SIGTERM, then SIGKILL) and
            subprocess.TimeoutExpired raised.
        dry_run: run `stemsim --dry-run` and return what it printed (Config.dry_run does).
        ini: where a Config is written.
        progress: True prints one line of stemsim's progress (stage, percent, ETA) as it runs;
            a callable is called `progress(stage, fraction, eta_seconds)` at each of stemsim's
            progress lines.

    Returns:
        str: the absolute path of the file stemsim published (its "published:" line); with
        dry_run, the text it printed.

    Raises:
        StemsimError: stemsim failed (its returncode, message and output).
        subprocess.TimeoutExpired: past `timeout` seconds.
        FileNotFoundError: no stemsim found.
    """
    exe = find_stemsim(stemsim)
    cwd = os.path.abspath(cwd or os.getcwd())
    tmpdir = None
    if isinstance(config, Config):
        if ini is None:
            tmpdir = tempfile.mkdtemp(prefix="stemsim-")
            ini = os.path.join(tmpdir, "config.ini")
        ini = config.write(ini)
        out_name = config.output
    else:
        ini = os.fspath(config)
        out_name = Config.from_file(ini).output
    for a in args:
        if isinstance(a, str) and a.startswith("output.file="):
            out_name = a.split("=", 1)[1]
    cmd = [exe] + [os.fspath(a) for a in args] + [os.path.abspath(ini)]
    if srun:
        cmd = ["srun", "-n", str(ranks)] + list(mpi_args) + cmd
    elif mpirun or ranks > 1:
        launcher = shlex.split(mpirun) if isinstance(mpirun, str) else list(mpirun or ["mpirun"])
        cmd = launcher + ["-np", str(ranks)] + list(mpi_args) + cmd
    chunks = []
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
        rc = _wait(proc, chunks, echo, timeout, cmd, _print_progress if progress is True else progress)
        if progress is True:
            sys.stderr.write("\n")
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    text = "".join(chunks)
    if rc != 0:
        msg = _error_lines(text)
        if tmpdir:
            msg = msg.replace(ini, "<the stemsim.Config>") + "\n(the Config was written to a temporary file; " \
                  "cfg.write(path) or run(..., ini=path) keeps it)"
        raise StemsimError(rc, msg, text, cmd)
    if dry_run:
        return text
    published = [ln[len("published: "):].rstrip("\n") for ln in chunks if ln.startswith("published: ")]
    return published[-1] if published else os.path.join(cwd, out_name)  # stemsim names the file it published
