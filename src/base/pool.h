/* The process's compile pool: worker threads that run queued tasks (unit
 * images produced ahead of need).  Threads start on the first task; their
 * number is SSMJIT_COMPILE_THREADS, else the machine's cores, unless set. */
#ifndef SSMJIT_POOL_H
#define SSMJIT_POOL_H

typedef struct sj_pool_task {
    void (*run)(struct sj_pool_task *task); /* on a worker; owns nothing of the pool's */
    struct sj_pool_task *next;
} sj_pool_task;

/* Appends task to the queue and wakes a worker (starting them if needed).
 * With no worker able to start, or the pool stopped, the task runs at once
 * in the caller. */
void sj_pool_submit(sj_pool_task *task);

/* Takes task out of the queue if no worker has taken it yet: 1 if so (it
 * will not run), 0 if it already runs or ran. */
int sj_pool_cancel(sj_pool_task *task);

/* Workers wanted from now on; n <= 0: the default.  Surplus workers stay
 * idle. */
void sj_pool_set_threads(int n);

/* Workers wanted (the default resolved). */
int sj_pool_threads(void);

/* For fork: the pool's lock is held across fork (prepare, parent), and the
 * child starts with no workers and an empty queue (child). */
void sj_pool_atfork_prepare(void);
void sj_pool_atfork_parent(void);
void sj_pool_atfork_child(void);

/* Stops taking tasks (queued ones stay queued, to be cancelled by their
 * owner), waits for the running ones and joins every worker: at exit, so
 * that no worker is inside NVRTC while its library is torn down, and none
 * is left half gone. */
void sj_pool_stop(void);

#endif
