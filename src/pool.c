/* A plain FIFO of tasks and a set of detached worker threads. */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, idle = PTHREAD_COND_INITIALIZER;
static sj_pool_task *head, *tail;
static int wanted;   /* 0: not resolved yet */
static int workers;  /* threads alive */
static int busy;     /* workers running a task */
static int stopping;

static int default_threads(void)
{
    const char *env = getenv("SSMJIT_COMPILE_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : 0;
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!head && !stopping && workers <= wanted)
            pthread_cond_wait(&work, &lock);
        if (stopping || workers > wanted)
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
    workers--;
    pthread_cond_broadcast(&idle);
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Under lock: starts workers up to `wanted`; 0 if none runs. */
static int grow(void)
{
    if (!wanted)
        wanted = default_threads();
    while (workers < wanted && !stopping) {
        pthread_t th;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) != 0)
            break;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int ok = pthread_create(&th, &attr, worker, NULL) == 0;
        pthread_attr_destroy(&attr);
        if (!ok)
            break;
        workers++;
    }
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
    pthread_cond_signal(&work);
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
    wanted = n > 0 ? (n > 256 ? 256 : n) : default_threads();
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
    pthread_mutex_unlock(&lock);
}
