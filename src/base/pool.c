/* A plain FIFO of tasks and a set of worker threads.  Workers are joinable
 * and never leave before the pool stops (a worker past the wanted number
 * just takes no task), so that stopping can join every one: at exit no
 * thread of ours is left half torn down. */
#include "pool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 256

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, idle = PTHREAD_COND_INITIALIZER;
static sj_pool_task *head, *tail;
static int wanted;  /* 0: not resolved yet */
static int workers; /* threads started (and not joined) */
static pthread_t threads[MAX_THREADS];
static int busy;    /* workers running a task */
static int stopping;

static int default_threads(void)
{
    const char *env = getenv("SSMJIT_COMPILE_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : 0;
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static void *worker(void *arg)
{
    const int index = (int)(intptr_t)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!stopping && (!head || index >= wanted))
            pthread_cond_wait(&work, &lock);
        if (stopping)
            break;
        sj_pool_task *t = head;
        head = t->next;
        if (!head)
            tail = NULL;
        busy++;
        pthread_mutex_unlock(&lock);
        t->run(t);
        pthread_mutex_lock(&lock);
        busy--;
        pthread_cond_broadcast(&idle);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Under lock: starts workers up to `wanted`; 0 if none runs. */
static int grow(void)
{
    if (!wanted)
        wanted = default_threads();
    while (workers < wanted && !stopping &&
           pthread_create(&threads[workers], NULL, worker, (void *)(intptr_t)workers) == 0)
        workers++;
    return workers;
}

void sj_pool_submit(sj_pool_task *task)
{
    task->next = NULL;
    pthread_mutex_lock(&lock);
    if (stopping || !grow()) {
        pthread_mutex_unlock(&lock);
        task->run(task);
        return;
    }
    if (tail)
        tail->next = task;
    else
        head = task;
    tail = task;
    pthread_cond_broadcast(&work);
    pthread_mutex_unlock(&lock);
}

int sj_pool_cancel(sj_pool_task *task)
{
    int removed = 0;
    pthread_mutex_lock(&lock);
    for (sj_pool_task **p = &head, *prev = NULL; *p; prev = *p, p = &(*p)->next)
        if (*p == task) {
            *p = task->next;
            if (tail == task)
                tail = prev;
            removed = 1;
            break;
        }
    pthread_mutex_unlock(&lock);
    return removed;
}

void sj_pool_set_threads(int n)
{
    pthread_mutex_lock(&lock);
    wanted = n > 0 ? (n > MAX_THREADS ? MAX_THREADS : n) : default_threads();
    if (head)
        grow();
    pthread_cond_broadcast(&work);
    pthread_mutex_unlock(&lock);
}

int sj_pool_threads(void)
{
    pthread_mutex_lock(&lock);
    if (!wanted)
        wanted = default_threads();
    int n = wanted;
    pthread_mutex_unlock(&lock);
    return n;
}

void sj_pool_atfork_prepare(void) { pthread_mutex_lock(&lock); }

void sj_pool_atfork_parent(void) { pthread_mutex_unlock(&lock); }

void sj_pool_atfork_child(void)
{
    head = tail = NULL;
    workers = busy = 0;
    pthread_mutex_unlock(&lock);
}

void sj_pool_stop(void)
{
    pthread_mutex_lock(&lock);
    stopping = 1;
    pthread_cond_broadcast(&work);
    while (busy)
        pthread_cond_wait(&idle, &lock);
    int n = workers;
    workers = 0;
    pthread_mutex_unlock(&lock);
    /* exit() may come from one of them (a callback): it cannot join itself */
    for (int i = 0; i < n; i++)
        if (!pthread_equal(threads[i], pthread_self()))
            pthread_join(threads[i], NULL);
}
