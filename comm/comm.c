/* The communicators of a run (world, frozen-phonon groups, node shares) and the
 * one-process session; the collective operations are in collectives.c. */
#include "comm.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Automatic groups: as many as divide the ranks evenly without exceeding the
 * configurations, so groups never idle and every group has the same size. */
static int choose_groups(int world_size, int n_configs, int requested)
{
    if (requested > 0) return requested;
    int best = 1;
    for (int g = 1; g <= world_size && g <= n_configs; g++)
        if (world_size % g == 0) best = g;
    return best;
}

/* Variables a launcher (mpirun, srun, another PMI) sets in its processes' environment. */
static const char *const launcher_rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
static const char *const launcher_vars[] = {
    "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",     "PMI_RANK",        "PMI_SIZE",         "PMIX_NAMESPACE",
    "OMPI_UNIVERSE_SIZE",   "SLURM_STEP_ID", "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD", "PMI_FD"};

static int stem_mpi_launched(void)
{
    for (size_t k = 0; k < sizeof launcher_vars / sizeof launcher_vars[0]; k++)
        if (getenv(launcher_vars[k])) return 1;
    return 0;
}

int stem_mpi_launch_rank(void)
{
    if (!stem_mpi_launched()) return 0;
    for (size_t k = 0; k < sizeof launcher_rank_vars / sizeof launcher_rank_vars[0]; k++) {
        const char *v = getenv(launcher_rank_vars[k]);
        if (v && *v) return atoi(v);
    }
    return 0;
}

/* Open MPI 4.1 names an isolated singleton's session directory <tmpdir>/ompi.<host>.<uid>/jf.0/1
 * whatever its pid: every one-process job of a user on a node shares it, and the first to
 * finish removes it under the others (the shared-file-pointer file of their output, or the
 * directory another is creating in MPI_Init). A directory of its own, under the same base
 * Open MPI would use, keeps each job's session apart. */
static int remove_session_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw);

#define SESSION_LOCK "stemsim.lock"

/* The session directories of this user's runs under base that were killed: each run holds its
 * directory's lock while it lives, so a lock taken here is a dead run's; its directory goes. A
 * directory without the lock (being created, or another program's) is left alone. */
static void reclaim_sessions(const char *base)
{
    DIR *d = opendir(base);
    struct dirent *e;
    char dir[STEM_PATH_MAX], lock[STEM_PATH_MAX + 32];
    while (d && (e = readdir(d))) {
        struct stat st;
        if (strncmp(e->d_name, "stemsim-mpi.", 12) || strlen(e->d_name) != 18) continue;
        if ((size_t)snprintf(dir, sizeof dir, "%s/%s", base, e->d_name) >= sizeof dir) continue;
        if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
        snprintf(lock, sizeof lock, "%s/" SESSION_LOCK, dir);
        int fd = open(lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        int dead = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
        if (fd >= 0) close(fd);
        if (dead) nftw(dir, remove_session_entry, 8, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    }
    if (d) closedir(d);
}

static int private_session(stem_mpi_session *s)
{
    const char *base = getenv("OMPI_MCA_orte_tmpdir_base");
    const char *order[] = {"TMPDIR", "TEMP", "TMP"}; /* Open MPI's own order */
    for (size_t k = 0; (!base || !*base) && k < sizeof order / sizeof order[0]; k++) base = getenv(order[k]);
    if (!base || !*base) base = "/tmp";
    if ((size_t)snprintf(s->dir, sizeof s->dir, "%s/stemsim-mpi.XXXXXX", base) >= sizeof s->dir) {
        s->dir[0] = 0;
        return STEM_FAIL(STEM_ERR_MPI,
                         "the temporary directory '%.200s...' (TMPDIR or OMPI_MCA_orte_tmpdir_base) "
                         "is too long for Open MPI's session files",
                         base);
    }
    struct stat st;
    if (!mkdtemp(s->dir) || lstat(s->dir, &st) != 0) {
        int e = errno;
        s->dir[0] = 0;
        return STEM_FAIL(STEM_ERR_MPI,
                         "cannot create a private directory for Open MPI's session files in %s: %s "
                         "(set TMPDIR to a writable directory)",
                         base, strerror(e));
    }
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    char lock[STEM_PATH_MAX + 32], made[STEM_PATH_MAX + 32];
    snprintf(lock, sizeof lock, "%s/" SESSION_LOCK, s->dir);
    snprintf(made, sizeof made, "%s/." SESSION_LOCK, s->dir);
    /* locked before it takes its name: another run never finds it unlocked while this one lives */
    s->lock_fd = open(made, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (s->lock_fd >= 0 && (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0 || rename(made, lock) != 0)) {
        close(s->lock_fd);
        s->lock_fd = -1;
    }
    reclaim_sessions(base); /* after ours is locked: it is never taken for a dead one */
    return setenv("OMPI_MCA_orte_tmpdir_base", s->dir, 1) == 0
        ? STEM_OK
        : STEM_FAIL(STEM_ERR_MPI, "cannot set OMPI_MCA_orte_tmpdir_base: %s", strerror(errno));
}

int stem_mpi_singleton_defaults(stem_mpi_session *s)
{
    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
    if (stem_mpi_launched()) return STEM_OK;
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0); /* no helper daemon: stemsim never spawns */
    setenv("OMPI_MCA_pml", "ob1", 0);                  /* no network transports for one process */
    setenv("OMPI_MCA_btl", "self,vader", 0);
    return private_session(s);
}

static int remove_session_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if ((flag == FTW_DP ? rmdir(path) : unlink(path)) != 0) stem_warn("cannot remove %s: %s", path, strerror(errno));
    return 0; /* remove what can be removed */
}

void stem_mpi_session_remove(stem_mpi_session *s)
{
    struct stat st;
    /* the directory mkdtemp made, nothing put in its place; depth first, links not followed,
     * not into another file system */
    if (s->dir[0] && lstat(s->dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == s->dev && st.st_ino == s->ino)
        nftw(s->dir, remove_session_entry, 8, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    s->dir[0] = 0;
    if (s->lock_fd >= 0) close(s->lock_fd);
    s->lock_fd = -1;
}

int stem_mpi_setup(stem_mpi *m, MPI_Comm world, int n_configs, int requested, int node_shared, int ranks_per_node)
{
    memset(m, 0, sizeof *m);
    m->world = world;
    stem_layout *L = &m->layout;
    STEM_MPI_CALL(MPI_Comm_size(world, &L->world_size));
    L->launched = stem_mpi_launched();
    STEM_MPI_CALL(MPI_Comm_rank(world, &L->world_rank));
    MPI_Comm node;
    STEM_MPI_CALL(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, L->world_rank, MPI_INFO_NULL, &node));
    STEM_MPI_CALL(MPI_Comm_size(node, &L->ranks_on_node));
    STEM_MPI_CALL(MPI_Comm_rank(node, &L->local_rank));
    MPI_Comm_free(&node);
    L->n_groups = choose_groups(L->world_size, n_configs, requested);
    if (L->world_size % L->n_groups)
        return STEM_FAIL(STEM_ERR_CONFIG, "[compute] fp_groups = %d does not divide the %d ranks", L->n_groups,
                         L->world_size);
    if (L->n_groups > n_configs)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "[compute] fp_groups = %d exceeds the %d units of work (frozen-phonon configurations; times "
                         "tilts in a [series] campaign)",
                         L->n_groups, n_configs);
    L->group_size = L->world_size / L->n_groups;
    L->group = L->world_rank / L->group_size;
    L->group_rank = L->world_rank % L->group_size;
    STEM_MPI_CALL(MPI_Comm_split(world, L->group, L->group_rank, &m->group));
    STEM_MPI_CALL(MPI_Comm_split(world, L->group_rank, L->group, &m->cross));
    STEM_TRY(stem_node_share_setup(&m->share, m->group, node_shared, ranks_per_node, &L->not_shared));
    L->shared_ranks = m->share.active ? m->share.node_size : 1;
    const char *why = NULL;
    if (L->n_groups > 1) STEM_TRY(stem_node_share_setup(&m->cross_share, m->cross, node_shared, ranks_per_node, &why));
    return STEM_OK;
}

void stem_mpi_free(stem_mpi *m)
{
    if (m->group != MPI_COMM_NULL && m->group) MPI_Comm_free(&m->group);
    if (m->cross != MPI_COMM_NULL && m->cross) MPI_Comm_free(&m->cross);
    stem_node_share_free(&m->share);
    stem_node_share_free(&m->cross_share);
}
