/* The memory one rank may use by default: the smallest of what the machine,
 * the batch system (cgroup v2 memory.max / v1 memory.limit_in_bytes: Slurm
 * --mem, containers) and RLIMIT_AS (ulimit -v) allow. */
#ifndef STEM_MEMLIMIT_H
#define STEM_MEMLIMIT_H

#define STEM_MEMORY_FRACTION 0.8 /* headroom for libraries, MPI buffers, the OS */

typedef struct {
    double bytes;     /* per rank */
    char source[256]; /* what set it, for the plan and for refusals */
} stem_memory_limit;

/* The tightest cgroup memory limit of this process (bytes; 0: none), read
 * from proc_cgroup (/proc/self/cgroup) under root (/sys/fs/cgroup), walking
 * from the process's cgroup up to the root. Parameters exist for tests. */
double stem_cgroup_memory_limit(const char *proc_cgroup, const char *root);
/* Limit per rank: config_gib > 0 is the user's; else STEM_MEMORY_FRACTION of
 * min(physical, cgroup) / ranks_on_node, and of RLIMIT_AS (per process). */
void stem_memory_limit_choose(double config_gib, int ranks_on_node, stem_memory_limit *out);

/* The most resident memory this process has held so far (bytes; 0: unknown): the libraries,
 * MPI (its start-up's peak), HDF5, FFTW and the model, when the plan is made. */
double stem_process_resident_bytes(void);

/* Free bytes where MPI places node-shared memory windows (Open MPI's
 * osc_sm_backing_directory when set, else /dev/shm; the directory in dir), or -1
 * when unknown. A full one kills a process with SIGBUS on first touch. */
double stem_shared_memory_room(char *dir, int dir_len);

#endif
