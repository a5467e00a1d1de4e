/* A whole batch of object reads in one call: preadv of each object from its bucket file into the caller's
 * memory, then the CRC32C of what landed there against the one its writer recorded.
 *
 * mcctl._crc32c compiles this file with _crc32c_hw.c into one library; mcctl.client calls it through ctypes,
 * which releases the GIL for the call. Python looks the batch up, checks every descriptor and buffer, and
 * fills the plan below; this code does only the system calls and the checksums, so a batch of small objects
 * costs one Python-to-C transition instead of a few Python calls per object.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

uint32_t mcctl_crc32c(uint32_t crc, const void *buf, size_t len);

/* What happened to one object, in mcctl_read.result (a size >= 0 is success). */
#define READ_FAILED (-1)        /* detail: errno of preadv */
#define READ_END_OF_FILE (-2)   /* detail: the offset at which the file ended */
#define READ_CHECKSUM (-3)      /* detail: the CRC32C of the bytes read */

/* One object of the plan: its `size` bytes at `offset` of `fd` go to iovecs [first_iov, first_iov + iov_count)
 * of the batch's iovec array, one after another; those iovecs hold exactly `size` bytes. Every field is 64
 * bits so Python fills the plan as one flat array of int64. */
typedef struct {
    int64_t fd, offset, size, first_iov, iov_count, expected_crc32c;
    int64_t result, detail; /* written here */
} mcctl_read;

#define LOCAL_IOVECS 16
#define MAX_IOVECS_PER_CALL 1024 /* IOV_MAX on Linux */

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* the clock of Python's time.monotonic() */
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Fills iov[0..count) from `offset`; short reads are continued, EINTR retried. `iov` is a scratch copy. */
static int64_t read_all(int fd, struct iovec *iov, int64_t count, int64_t offset, int64_t *detail) {
    int64_t i = 0;
    while (i < count && iov[i].iov_len == 0)
        i++;
    while (i < count) {
        int64_t batch = count - i < MAX_IOVECS_PER_CALL ? count - i : MAX_IOVECS_PER_CALL;
        ssize_t n = preadv(fd, iov + i, (int)batch, offset);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            *detail = errno;
            return READ_FAILED;
        }
        if (n == 0) {
            *detail = offset;
            return READ_END_OF_FILE;
        }
        offset += n;
        while (i < count && (size_t)n >= iov[i].iov_len) {
            n -= (ssize_t)iov[i].iov_len;
            i++;
        }
        if (i < count && n) {
            iov[i].iov_base = (char *)iov[i].iov_base + n;
            iov[i].iov_len -= (size_t)n;
        }
    }
    return 0;
}

static void read_one(mcctl_read *r, const struct iovec *iov) {
    struct iovec local[LOCAL_IOVECS];
    const struct iovec *mine = iov + r->first_iov;
    int64_t position = r->offset;
    /* preadv advances through a copy; the checksum then runs over the caller's regions as given. */
    for (int64_t start = 0; start < r->iov_count; start += LOCAL_IOVECS) {
        int64_t part = r->iov_count - start < LOCAL_IOVECS ? r->iov_count - start : LOCAL_IOVECS;
        size_t bytes = 0;
        memcpy(local, mine + start, (size_t)part * sizeof(struct iovec));
        for (int64_t k = 0; k < part; k++)
            bytes += local[k].iov_len;
        int64_t failed = read_all((int)r->fd, local, part, position, &r->detail);
        if (failed) {
            r->result = failed;
            return;
        }
        position += (int64_t)bytes;
    }
    uint32_t crc = 0;
    for (int64_t k = 0; k < r->iov_count; k++)
        crc = mcctl_crc32c(crc, mine[k].iov_base, mine[k].iov_len);
    if (crc != (uint32_t)r->expected_crc32c) {
        r->result = READ_CHECKSUM;
        r->detail = crc;
        return;
    }
    r->result = r->size;
    r->detail = 0;
}

/* Reads reads[0..n) in order and returns how many it read. Before each object after the first it stops when
 * CLOCK_MONOTONIC has passed `stop_after_ns` (0: never), so no read starts on a lapsed read lease; the
 * caller looks the rest up again and calls once more. */
int64_t mcctl_read_batch(mcctl_read *reads, int64_t n, const struct iovec *iov, int64_t stop_after_ns) {
    for (int64_t i = 0; i < n; i++) {
        if (i > 0 && stop_after_ns > 0 && monotonic_ns() > stop_after_ns)
            return i;
        read_one(&reads[i], iov);
    }
    return n;
}

/* One batch shared by the threads reading it: each takes the next object from `next` until none is left or the
 * lease's time is up. Objects are handed out in order and every object handed out is read, so the objects read
 * are always the first `next` of the plan (a prefix), as with one thread. */
typedef struct {
    mcctl_read *reads;
    int64_t n;
    const struct iovec *iov;
    int64_t stop_after_ns;
    int64_t next; /* atomic */
    int yielding;   /* atomic: set while the batch's caller waits on something else (mcctl_read_batch_start) */
    int64_t yields; /* atomic: how often a thread reading it gave way */
} shared_batch;

/* While the caller of mcctl_read_batch_start waits for the batch's lookup, the threads reading ahead give up the
 * CPU after every YIELD_EVERY_BYTES they read. Copies from the page cache keep every core busy, and the lookup's
 * answer needs two threads woken in turn (the master's, woken by the request, when it runs on this host, then the
 * caller's, woken by the answer); a woken thread may otherwise wait for a reading thread's time slice to end (on
 * Linux's EEVDF scheduler, which does not preempt on every wake-up: on two vCPUs a lookup of 0.2 ms took 1 ms and
 * more). A yield with no
 * other thread waiting costs one system call: for 256 KiB read, well under a percent. */
#define YIELD_EVERY_BYTES (256 * 1024)

static void *take_and_read(void *arg) {
    shared_batch *b = arg;
    int64_t since_yield = 0;
    for (;;) {
        if (b->stop_after_ns > 0 && monotonic_ns() > b->stop_after_ns)
            return NULL;
        int64_t i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
        if (i >= b->n)
            return NULL;
        read_one(&b->reads[i], b->iov);
        if (__atomic_load_n(&b->yielding, __ATOMIC_RELAXED)) {
            since_yield += b->reads[i].size;
            if (since_yield >= YIELD_EVERY_BYTES) {
                since_yield = 0;
                sched_yield();
                __atomic_fetch_add(&b->yields, 1, __ATOMIC_RELAXED);
            }
        }
    }
}

#define MAX_READ_THREADS 64

/* The reader's helper threads: started when a batch first asks for more than are idle, at most MAX_READ_THREADS in
 * all, then kept parked for the next batch, since starting and joining threads for every batch costs more than a
 * batch of small objects takes to read. A batch asking for helpers is a job in the pool's queue until as many as it asked
 * for have joined it or its caller withdraws it; its caller then waits until every helper that joined has left it.
 * `lock` guards every field of `pool` and the `slots`, `active` and `next_job` fields of every job; it is the only
 * lock here and nests inside nothing. The helpers take no signals: those go to the caller's threads, as they would
 * without them. After fork() the child has none of the parent's threads, so its pool starts empty. */
typedef struct job {
    shared_batch batch;
    int64_t slots;        /* helpers that may still join */
    int64_t active;       /* helpers reading it now */
    struct job *next_job; /* in the queue while slots > 0 */
} job;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work; /* a job was queued */
    pthread_cond_t left; /* a helper left a job */
    job *head, *tail;
    int64_t threads;  /* helpers started */
    int64_t idle;     /* helpers parked, waiting for a job */
    int64_t starting; /* helpers started that have not looked at the queue yet */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, 0};

static pthread_once_t pool_fork_handlers = PTHREAD_ONCE_INIT;

static void pool_before_fork(void) { pthread_mutex_lock(&pool.lock); }
static void pool_after_fork_in_parent(void) { pthread_mutex_unlock(&pool.lock); }
static void pool_after_fork_in_child(void) {
    /* The lock was taken before the fork by the thread that forked, which is this one: the child starts over. */
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.work, NULL);
    pthread_cond_init(&pool.left, NULL);
    pool.head = pool.tail = NULL;
    pool.threads = pool.idle = pool.starting = 0;
}
static void pool_register_fork_handlers(void) {
    pthread_atfork(pool_before_fork, pool_after_fork_in_parent, pool_after_fork_in_child);
}

/* Caller holds pool.lock. */
static void dequeue(job *j) {
    job **at = &pool.head;
    job *before = NULL;
    while (*at != NULL && *at != j) {
        before = *at;
        at = &(*at)->next_job;
    }
    if (*at == NULL)
        return;
    *at = j->next_job;
    if (pool.tail == j)
        pool.tail = before;
    j->next_job = NULL;
}

static void *helper(void *unused) {
    (void)unused;
    pthread_mutex_lock(&pool.lock);
    pool.starting--;
    for (;;) {
        while (pool.head == NULL) {
            pool.idle++;
            pthread_cond_wait(&pool.work, &pool.lock);
            pool.idle--;
        }
        job *j = pool.head;
        j->active++;
        if (--j->slots == 0)
            dequeue(j);
        pthread_mutex_unlock(&pool.lock);
        take_and_read(&j->batch);
        pthread_mutex_lock(&pool.lock);
        if (--j->active == 0)
            pthread_cond_broadcast(&pool.left);
    }
    return NULL;
}

/* Queues `j` for up to `helpers` helpers, starting threads while fewer are idle (and fewer than MAX_READ_THREADS
 * run); whether any helper exists to take it. */
static int submit(job *j, int64_t helpers) {
    pthread_once(&pool_fork_handlers, pool_register_fork_handlers);
    j->slots = helpers;
    j->active = 0;
    j->next_job = NULL;
    pthread_mutex_lock(&pool.lock);
    if (pool.idle + pool.starting < helpers && pool.threads < MAX_READ_THREADS) {
        sigset_t all, before;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &before);
        for (int64_t wanted = helpers - pool.idle - pool.starting; wanted > 0 && pool.threads < MAX_READ_THREADS; wanted--) {
            pthread_t thread;
            if (pthread_create(&thread, NULL, helper, NULL) != 0)
                break;
            pthread_detach(thread);
            pool.threads++;
            pool.starting++;
        }
        pthread_sigmask(SIG_SETMASK, &before, NULL);
    }
    int any = pool.threads > 0;
    if (any && helpers > 0) {
        if (pool.tail != NULL)
            pool.tail->next_job = j;
        else
            pool.head = j;
        pool.tail = j;
        if (helpers == 1)
            pthread_cond_signal(&pool.work);
        else
            pthread_cond_broadcast(&pool.work);
    }
    pthread_mutex_unlock(&pool.lock);
    return any;
}

/* Reads what is left of `j` on this thread too, withdraws it from the queue, and waits until no helper reads it:
 * then nothing writes into the plan's memory any more. */
static int64_t finish(job *j) {
    take_and_read(&j->batch);
    pthread_mutex_lock(&pool.lock);
    if (j->slots > 0) {
        dequeue(j);
        j->slots = 0;
    }
    while (j->active > 0)
        pthread_cond_wait(&pool.left, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    int64_t taken = __atomic_load_n(&j->batch.next, __ATOMIC_ACQUIRE);
    return taken < j->batch.n ? taken : j->batch.n;
}

/* No more threads than objects, nor than MAX_READ_THREADS. */
static int64_t threads_for(int64_t n, int64_t threads) {
    if (threads > n)
        threads = n;
    return threads > MAX_READ_THREADS ? MAX_READ_THREADS : threads;
}

/* As mcctl_read_batch, on up to `threads` threads (this one and threads - 1 of the pool's helpers): while one
 * thread waits in preadv or checks a CRC32C, another reads the next object. On a shared file system an object's
 * read is a network round trip, and the objects of a batch are independent, so they are read side by side.
 * The first object is read before any other thread takes one, whatever the clock says, as with one thread; with
 * no helper free, this thread reads the whole batch. */
int64_t mcctl_read_batch_threads(mcctl_read *reads, int64_t n, const struct iovec *iov, int64_t stop_after_ns, int64_t threads) {
    threads = threads_for(n, threads);
    if (threads <= 1)
        return mcctl_read_batch(reads, n, iov, stop_after_ns);
    read_one(&reads[0], iov);
    job j = {.batch = {reads, n, iov, stop_after_ns, 1, 0, 0}}; /* submit sets the rest */
    submit(&j, threads - 1);
    return finish(&j);
}

/* Starts reading reads[0..n) on up to `threads` of the pool's helpers (none is the caller's), each object only
 * while CLOCK_MONOTONIC has not passed `stop_after_ns`, the first one included; returns at once. Until the wait,
 * the helpers give way after every YIELD_EVERY_BYTES, for the caller's thread is waiting on something else. The plan and the
 * memory it names must stay in place until mcctl_read_batch_wait returns, which must be called exactly once. NULL
 * when no helper thread exists or could be started: nothing was read. */
void *mcctl_read_batch_start(mcctl_read *reads, int64_t n, const struct iovec *iov, int64_t stop_after_ns, int64_t threads) {
    threads = threads_for(n, threads);
    if (threads < 1)
        return NULL;
    job *j = calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    j->batch = (shared_batch){reads, n, iov, stop_after_ns, 0, 1, 0};
    if (!submit(j, threads)) {
        free(j);
        return NULL;
    }
    return j;
}

/* Reads what the helpers of a batch from mcctl_read_batch_start have not taken yet on this thread (within the same
 * time limit), the helpers no longer giving way, waits until they are done with it, and frees it; how many objects
 * were read: always the first so many. `*yields` (when not NULL): how often the helpers gave way. */
int64_t mcctl_read_batch_wait(void *handle, int64_t *yields) {
    job *j = handle;
    __atomic_store_n(&j->batch.yielding, 0, __ATOMIC_RELAXED);
    int64_t read = finish(j);
    if (yields != NULL)
        *yields = __atomic_load_n(&j->batch.yields, __ATOMIC_RELAXED); /* finish() saw every helper leave, under the lock */
    free(j);
    return read;
}
