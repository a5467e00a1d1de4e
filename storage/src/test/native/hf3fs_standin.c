/*
 * A stand-in for 3FS's USRBIO library (libhf3fs_api_shared.so), for mcctl's tests only. It is NOT 3FS and
 * must never be taken for it: it lives in the test sources, is built into storage/target/native, prints
 * nothing, and executes IOs on ordinary files with pread and pwrite.
 *
 * What it keeps of the real library (3FS's src/lib/api/UsrbIo.md and hf3fs_usrbio.h), and how:
 * - The mount: a directory that holds a "3fs-virt" subdirectory is a 3FS mount root (the real library finds
 *   mounts by that directory too). hf3fs_extract_mount_point and hf3fs_is_hf3fs answer from it, and an iov or
 *   a ring for a path that is not such a root is refused with -ENOENT, as the real one fails to open
 *   <mount>/3fs-virt/iovs.
 * - iovs are shared memory (memfd) of the given size; rings are read-only or write-only.
 * - hf3fs_reg_fd: EBADF (positive) for an fd off 3FS, EINVAL for an fd number already registered (a
 *   registered fd closed without hf3fs_dereg_fd and its number reused), else -dupfd (<= 0). IOs run on the
 *   duplicate, so a closed registered fd still reaches its old file. hf3fs_dereg_fd of a closed fd does
 *   nothing.
 * - hf3fs_prep_io: -EINVAL for a read on a write ring or the reverse, a zero length, or [ptr, ptr+len) not
 *   inside the iov; -EBADF for an unregistered fd; -EACCES for a read on an fd opened write-only or the
 *   reverse; -EAGAIN when the ring already holds `entries` IOs that were not reaped.
 * - Results come only through hf3fs_wait_for_ios: bytes done, or -errno. A read that meets the end of the
 *   file returns the bytes before it (a positive short count; 0 at or past the end), as the real one sums
 *   what its chunks returned. hf3fs_wait_for_ios returns what it reaped when abs_timeout passes, never an
 *   error for the timeout.
 * - io_depth > 0 runs IOs only in groups of io_depth, as the real ring does.
 *
 * Where the real library gives no defined answer, the stand-in is strict, so that a misuse fails here:
 * - Submitted IOs are executed inside hf3fs_wait_for_ios, not before: a caller that reads the iov before
 *   waiting, or changes a write's bytes after submitting, sees it go wrong. IOs prepped but never submitted
 *   are never executed (the real one may pick them up).
 * - An IO whose [ptr, ptr+len) crosses a block_size boundary of its iov completes with -EFAULT and moves no
 *   byte (the real one registers each block for RDMA separately; such an IO is outside the rules).
 * - A second thread that preps or submits on a ring while IOs prepped by another thread are not yet reaped
 *   gets -EBUSY; a second thread that waits on a ring while one is waiting gets -EBUSY. (The real one does
 *   not check and mixes the batches up.)
 */
#define _GNU_SOURCE
#include "hf3fs_usrbio_abi.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(void *) == 8, "the stand-in is for 64-bit Linux");
_Static_assert(sizeof(struct hf3fs_iov) == 312, "hf3fs_iov layout");
_Static_assert(offsetof(struct hf3fs_iov, iovh) == 8, "hf3fs_iov.iovh");
_Static_assert(offsetof(struct hf3fs_iov, id) == 16, "hf3fs_iov.id");
_Static_assert(offsetof(struct hf3fs_iov, mount_point) == 32, "hf3fs_iov.mount_point");
_Static_assert(offsetof(struct hf3fs_iov, size) == 288, "hf3fs_iov.size");
_Static_assert(offsetof(struct hf3fs_iov, block_size) == 296, "hf3fs_iov.block_size");
_Static_assert(offsetof(struct hf3fs_iov, numa) == 304, "hf3fs_iov.numa");
_Static_assert(sizeof(struct hf3fs_ior) == 600, "hf3fs_ior layout");
_Static_assert(offsetof(struct hf3fs_ior, iorh) == 312, "hf3fs_ior.iorh");
_Static_assert(offsetof(struct hf3fs_ior, mount_point) == 320, "hf3fs_ior.mount_point");
_Static_assert(offsetof(struct hf3fs_ior, for_read) == 576, "hf3fs_ior.for_read");
_Static_assert(offsetof(struct hf3fs_ior, io_depth) == 580, "hf3fs_ior.io_depth");
_Static_assert(offsetof(struct hf3fs_ior, priority) == 584, "hf3fs_ior.priority");
_Static_assert(offsetof(struct hf3fs_ior, timeout) == 588, "hf3fs_ior.timeout");
_Static_assert(offsetof(struct hf3fs_ior, flags) == 592, "hf3fs_ior.flags");
_Static_assert(sizeof(struct hf3fs_cqe) == 24, "hf3fs_cqe layout");
_Static_assert(offsetof(struct hf3fs_cqe, result) == 8, "hf3fs_cqe.result");
_Static_assert(offsetof(struct hf3fs_cqe, userdata) == 16, "hf3fs_cqe.userdata");

#define MOUNT_MARKER "3fs-virt"
#define IOV_MAGIC 0x53494f56u  /* "VOIS" */
#define RING_MAGIC 0x53524e47u /* "GNRS" */
#define MAX_REGISTERED_FDS (1 << 20)

/* ---- the mount marker ---- */

static bool is_mount_root(const char *dir) {
    char marker[PATH_MAX + sizeof(MOUNT_MARKER) + 1];
    if (snprintf(marker, sizeof(marker), "%s/%s", dir, MOUNT_MARKER) >= (int)sizeof(marker)) {
        return false;
    }
    struct stat st;
    return stat(marker, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The nearest directory at or above the absolute path that is a mount root, into root; its length or -1. */
static int mount_root_of(const char *path, char root[PATH_MAX]) {
    if (path[0] != '/' || strlen(path) >= PATH_MAX) {
        return -1;
    }
    strcpy(root, path);
    for (;;) {
        if (is_mount_root(root)) {
            return (int)strlen(root);
        }
        char *slash = strrchr(root, '/');
        if (slash == root) {
            if (root[1] == '\0') {
                return -1;
            }
            root[1] = '\0';
        } else {
            *slash = '\0';
        }
    }
}

bool hf3fs_is_hf3fs(int fd) {
    if (fd < 0) {
        return false;
    }
    char link[64];
    char path[PATH_MAX];
    char root[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n <= 0) {
        return false;
    }
    path[n] = '\0';
    return mount_root_of(path, root) >= 0;
}

int hf3fs_extract_mount_point(char *hf3fs_mount_point, int size, const char *path) {
    if (!path) {
        return -1;
    }
    char canonical[PATH_MAX];
    char root[PATH_MAX];
    if (!realpath(path, canonical)) {
        return -1;
    }
    int length = mount_root_of(canonical, root);
    if (length < 0) {
        return -1;
    }
    if (hf3fs_mount_point && length < size) {
        strcpy(hf3fs_mount_point, root);
    }
    return length + 1;
}

/* 0, or -errno as the real library returns when it cannot open <mount>/3fs-virt/iovs. */
static int check_mount(const char *mount, size_t field_size) {
    if (!mount || !*mount || strlen(mount) >= field_size) {
        return -EINVAL;
    }
    return is_mount_root(mount) ? 0 : -ENOENT;
}

/* ---- iovs ---- */

struct standin_iov {
    uint32_t magic;
    int memfd;
};

int hf3fs_iovcreate(struct hf3fs_iov *iov, const char *hf3fs_mount_point, size_t size, size_t block_size, int numa) {
    if (!iov) {
        return -EINVAL;
    }
    int bad_mount = check_mount(hf3fs_mount_point, sizeof(iov->mount_point));
    if (bad_mount) {
        return bad_mount;
    }
    if (size == 0 || block_size > size) {
        return -EINVAL;
    }
    int memfd = memfd_create("hf3fs-standin-iov", MFD_CLOEXEC);
    if (memfd < 0) {
        return -errno;
    }
    if (ftruncate(memfd, (off_t)size) < 0) {
        int error = errno;
        close(memfd);
        return -error;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (base == MAP_FAILED) {
        int error = errno;
        close(memfd);
        return -error;
    }
    struct standin_iov *handle = calloc(1, sizeof(*handle));
    if (!handle) {
        munmap(base, size);
        close(memfd);
        return -ENOMEM;
    }
    static atomic_ulong next_id;
    unsigned long id = atomic_fetch_add(&next_id, 1) + 1;
    pid_t pid = getpid();
    handle->magic = IOV_MAGIC;
    handle->memfd = memfd;
    iov->base = base;
    iov->iovh = handle;
    memset(iov->id, 0, sizeof(iov->id));
    memcpy(iov->id, &id, sizeof(id));
    memcpy(iov->id + sizeof(id), &pid, sizeof(pid));
    strcpy(iov->mount_point, hf3fs_mount_point);
    iov->size = size;
    iov->block_size = block_size;
    iov->numa = numa;
    return 0;
}

void hf3fs_iovdestroy(struct hf3fs_iov *iov) {
    if (!iov || !iov->iovh) {
        return;
    }
    struct standin_iov *handle = iov->iovh;
    if (handle->magic != IOV_MAGIC) {
        return;
    }
    munmap(iov->base, iov->size);
    close(handle->memfd);
    handle->magic = 0;
    free(handle);
    iov->iovh = NULL;
    iov->base = NULL;
}

/* ---- registered fds ---- */

struct registered_fd {
    int fd;
    int dupfd;
    int access_mode;
    atomic_int references; /* one for the table, one per IO prepped on it */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER; /* guards registry */
static struct registered_fd **registry;
static int registry_capacity;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void registry_init(void) {
    struct rlimit limit;
    rlim_t capacity = getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_max : 1024;
    registry_capacity = capacity > MAX_REGISTERED_FDS ? MAX_REGISTERED_FDS : (int)capacity;
    registry = calloc((size_t)registry_capacity, sizeof(*registry));
}

static void release_registered(struct registered_fd *file) {
    if (atomic_fetch_sub(&file->references, 1) == 1) {
        close(file->dupfd);
        free(file);
    }
}

int hf3fs_reg_fd(int fd, uint64_t flags) {
    (void)flags;
    pthread_once(&registry_once, registry_init);
    if (!registry || !hf3fs_is_hf3fs(fd) || fd >= registry_capacity) {
        return EBADF;
    }
    pthread_mutex_lock(&registry_lock);
    if (registry[fd]) {
        pthread_mutex_unlock(&registry_lock);
        return EINVAL;
    }
    int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dupfd < 0) {
        int error = errno;
        pthread_mutex_unlock(&registry_lock);
        return error;
    }
    if (dupfd >= registry_capacity || registry[dupfd]) {
        close(dupfd);
        pthread_mutex_unlock(&registry_lock);
        return EINVAL;
    }
    struct registered_fd *file = calloc(1, sizeof(*file));
    if (!file) {
        close(dupfd);
        pthread_mutex_unlock(&registry_lock);
        return ENOMEM;
    }
    file->fd = fd;
    file->dupfd = dupfd;
    file->access_mode = fcntl(fd, F_GETFL) & O_ACCMODE;
    atomic_init(&file->references, 1);
    registry[fd] = file;
    registry[dupfd] = file;
    pthread_mutex_unlock(&registry_lock);
    return -dupfd;
}

void hf3fs_dereg_fd(int fd) {
    pthread_once(&registry_once, registry_init);
    if (!registry || !hf3fs_is_hf3fs(fd) || fd >= registry_capacity) {
        return;
    }
    pthread_mutex_lock(&registry_lock);
    struct registered_fd *file = registry[fd];
    if (!file) {
        pthread_mutex_unlock(&registry_lock);
        return;
    }
    if (registry[file->dupfd] == file) {
        registry[file->dupfd] = NULL;
    }
    if (registry[file->fd] == file) {
        registry[file->fd] = NULL;
    }
    pthread_mutex_unlock(&registry_lock);
    release_registered(file);
}

/* The registration of fd (or of -dupfd) with a reference taken, or NULL. */
static struct registered_fd *acquire_registered(int fd) {
    pthread_once(&registry_once, registry_init);
    int index = fd < 0 ? -fd : fd;
    if (!registry || index >= registry_capacity) {
        return NULL;
    }
    pthread_mutex_lock(&registry_lock);
    struct registered_fd *file = registry[index];
    if (file) {
        atomic_fetch_add(&file->references, 1);
    }
    pthread_mutex_unlock(&registry_lock);
    return file;
}

/* ---- rings ---- */

enum slot_state { SLOT_FREE, SLOT_PREPPED, SLOT_SUBMITTED, SLOT_DONE };

struct io {
    enum slot_state state;
    const void *userdata;
    uint8_t *ptr;
    uint64_t length;
    uint64_t offset;
    struct registered_fd *file;
    uint8_t *iov_base;
    size_t block_size;
    int64_t result;
};

/*
 * lock guards every field below it. Slots move FREE -> PREPPED (prep) -> SUBMITTED (submit) -> DONE (executed in
 * wait) -> FREE (reaped in wait); queue holds the prepped and submitted slots in prep order, done the executed
 * ones in completion order.
 */
struct ring {
    uint32_t magic;
    atomic_int waiting;
    pthread_mutex_t lock;
    pthread_cond_t submitted_cond;
    int entries;
    bool for_read;
    int io_depth;
    struct io *ios;
    int *queue;
    int queued;
    int submitted; /* the first `submitted` of queue are submitted */
    int *done;
    int done_head;
    int done_count;
    int in_use; /* slots not FREE */
    pthread_t prepper;
};

size_t hf3fs_ior_size(int entries) {
    return 4096 + (size_t)(entries > 0 ? entries + 1 : 1) * 64;
}

static struct ring *ring_of(const struct hf3fs_ior *ior) {
    if (!ior || !ior->iorh) {
        return NULL;
    }
    struct ring *ring = ior->iorh;
    return ring->magic == RING_MAGIC ? ring : NULL;
}

int hf3fs_iorcreate4(struct hf3fs_ior *ior, const char *hf3fs_mount_point, int entries, bool for_read, int io_depth, int timeout,
                     int numa, uint64_t flags) {
    if (!ior || !hf3fs_mount_point || !*hf3fs_mount_point || timeout < 0 || entries <= 0 || io_depth > entries) {
        return -EINVAL;
    }
    int created = hf3fs_iovcreate(&ior->iov, hf3fs_mount_point, hf3fs_ior_size(entries), 0, numa);
    if (created < 0) {
        return created;
    }
    struct ring *ring = calloc(1, sizeof(*ring));
    struct io *ios = calloc((size_t)entries, sizeof(*ios));
    int *queue = calloc((size_t)entries, sizeof(*queue));
    int *done = calloc((size_t)entries, sizeof(*done));
    if (!ring || !ios || !queue || !done) {
        free(ring);
        free(ios);
        free(queue);
        free(done);
        hf3fs_iovdestroy(&ior->iov);
        return -ENOMEM;
    }
    ring->magic = RING_MAGIC;
    atomic_init(&ring->waiting, 0);
    pthread_mutex_init(&ring->lock, NULL);
    pthread_cond_init(&ring->submitted_cond, NULL);
    ring->entries = entries;
    ring->for_read = for_read;
    ring->io_depth = io_depth;
    ring->ios = ios;
    ring->queue = queue;
    ring->done = done;
    ior->iorh = ring;
    strcpy(ior->mount_point, hf3fs_mount_point);
    ior->for_read = for_read;
    ior->io_depth = io_depth;
    ior->priority = 0;
    ior->timeout = timeout;
    ior->flags = flags;
    return 0;
}

int hf3fs_iorcreate3(struct hf3fs_ior *ior, const char *hf3fs_mount_point, int entries, bool for_read, int io_depth, int priority,
                     int timeout, int numa) {
    int created = hf3fs_iorcreate4(ior, hf3fs_mount_point, entries, for_read, io_depth, timeout, numa, 0);
    if (created == 0) {
        ior->priority = priority;
    }
    return created;
}

int hf3fs_iorcreate2(struct hf3fs_ior *ior, const char *hf3fs_mount_point, int entries, bool for_read, int io_depth, int priority,
                     int numa) {
    return hf3fs_iorcreate3(ior, hf3fs_mount_point, entries, for_read, io_depth, priority, 0, numa);
}

int hf3fs_iorcreate(struct hf3fs_ior *ior, const char *hf3fs_mount_point, int entries, bool for_read, int io_depth, int numa) {
    return hf3fs_iorcreate2(ior, hf3fs_mount_point, entries, for_read, io_depth, 0, numa);
}

void hf3fs_iordestroy(struct hf3fs_ior *ior) {
    struct ring *ring = ring_of(ior);
    if (!ring) {
        return;
    }
    for (int i = 0; i < ring->entries; i++) {
        if (ring->ios[i].state != SLOT_FREE) {
            release_registered(ring->ios[i].file);
        }
    }
    ring->magic = 0;
    pthread_cond_destroy(&ring->submitted_cond);
    pthread_mutex_destroy(&ring->lock);
    free(ring->ios);
    free(ring->queue);
    free(ring->done);
    free(ring);
    ior->iorh = NULL;
    hf3fs_iovdestroy(&ior->iov);
}

int hf3fs_io_entries(const struct hf3fs_ior *ior) {
    struct ring *ring = ring_of(ior);
    return ring ? ring->entries : -EINVAL;
}

int hf3fs_prep_io(const struct hf3fs_ior *ior, const struct hf3fs_iov *iov, bool read, void *ptr, int fd, size_t off, uint64_t len,
                  const void *userdata) {
    struct ring *ring = ring_of(ior);
    if (!ring || read != ring->for_read || !iov || !ptr || !iov->base || len == 0 || fd == INT_MIN) {
        return -EINVAL;
    }
    uintptr_t base = (uintptr_t)iov->base;
    uintptr_t address = (uintptr_t)ptr;
    if (address < base || iov->size > UINTPTR_MAX - base) {
        return -EINVAL;
    }
    uintptr_t buffer_offset = address - base;
    if (buffer_offset > iov->size || len > iov->size - buffer_offset) {
        return -EINVAL;
    }
    struct registered_fd *file = acquire_registered(fd);
    if (!file) {
        return -EBADF;
    }
    if ((read && file->access_mode == O_WRONLY) || (!read && file->access_mode == O_RDONLY)) {
        release_registered(file);
        return -EACCES;
    }
    pthread_t self = pthread_self();
    pthread_mutex_lock(&ring->lock);
    if (ring->in_use > 0 && !pthread_equal(ring->prepper, self)) {
        pthread_mutex_unlock(&ring->lock);
        release_registered(file);
        return -EBUSY;
    }
    if (ring->in_use == ring->entries) {
        pthread_mutex_unlock(&ring->lock);
        release_registered(file);
        return -EAGAIN;
    }
    int index = 0;
    while (ring->ios[index].state != SLOT_FREE) {
        index++;
    }
    struct io *io = &ring->ios[index];
    io->state = SLOT_PREPPED;
    io->userdata = userdata;
    io->ptr = ptr;
    io->length = len;
    io->offset = off;
    io->file = file;
    io->iov_base = iov->base;
    io->block_size = iov->block_size;
    io->result = 0;
    ring->queue[ring->queued++] = index;
    ring->in_use++;
    ring->prepper = self;
    pthread_mutex_unlock(&ring->lock);
    return index;
}

int hf3fs_submit_ios(const struct hf3fs_ior *ior) {
    struct ring *ring = ring_of(ior);
    if (!ring) {
        return -EINVAL;
    }
    pthread_mutex_lock(&ring->lock);
    if (ring->in_use > 0 && !pthread_equal(ring->prepper, pthread_self())) {
        pthread_mutex_unlock(&ring->lock);
        return -EBUSY;
    }
    for (int i = ring->submitted; i < ring->queued; i++) {
        ring->ios[ring->queue[i]].state = SLOT_SUBMITTED;
    }
    ring->submitted = ring->queued;
    pthread_cond_broadcast(&ring->submitted_cond);
    pthread_mutex_unlock(&ring->lock);
    return 0;
}

static int64_t execute(bool for_read, const struct io *io) {
    if (io->block_size) {
        size_t start = (size_t)(io->ptr - io->iov_base);
        if (start / io->block_size != (start + io->length - 1) / io->block_size) {
            return -EFAULT;
        }
    }
    uint64_t done = 0;
    while (done < io->length) {
        ssize_t n = for_read ? pread(io->file->dupfd, io->ptr + done, io->length - done, (off_t)(io->offset + done))
                             : pwrite(io->file->dupfd, io->ptr + done, io->length - done, (off_t)(io->offset + done));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        if (n == 0) {
            break;
        }
        done += (uint64_t)n;
    }
    if (!for_read && done < io->length) {
        return -EIO;
    }
    return (int64_t)done;
}

/* Runs the submitted IOs the ring would run now (whole groups of io_depth when io_depth > 0). Holds ring->lock. */
__attribute__((unused)) static void execute_submitted(struct ring *ring) {
    int runnable = ring->submitted;
    if (ring->io_depth > 0) {
        runnable -= runnable % ring->io_depth;
    }
    for (int i = 0; i < runnable; i++) {
        int index = ring->queue[i];
        struct io *io = &ring->ios[index];
        io->result = execute(ring->for_read, io);
        io->state = SLOT_DONE;
        ring->done[(ring->done_head + ring->done_count) % ring->entries] = index;
        ring->done_count++;
    }
    memmove(ring->queue, ring->queue + runnable, (size_t)(ring->queued - runnable) * sizeof(*ring->queue));
    ring->queued -= runnable;
    ring->submitted -= runnable;
}

__attribute__((unused)) static int reap(struct ring *ring, struct hf3fs_cqe *cqes, int filled, int cqec) {
    while (filled < cqec && ring->done_count > 0) {
        int index = ring->done[ring->done_head];
        struct io *io = &ring->ios[index];
        cqes[filled].index = index;
        cqes[filled].reserved = 0;
        cqes[filled].result = io->result;
        cqes[filled].userdata = io->userdata;
        filled++;
        ring->done_head = (ring->done_head + 1) % ring->entries;
        ring->done_count--;
        release_registered(io->file);
        io->file = NULL;
        io->state = SLOT_FREE;
        ring->in_use--;
    }
    return filled;
}

#ifndef STANDIN_WITHOUT_WAIT_FOR_IOS
int hf3fs_wait_for_ios(const struct hf3fs_ior *ior, struct hf3fs_cqe *cqes, int cqec, int min_results,
                       const struct timespec *abs_timeout) {
    struct ring *ring = ring_of(ior);
    if (cqec <= 0 || !ring || !cqes) {
        return -EINVAL;
    }
    if (min_results > cqec) {
        min_results = cqec;
    }
    int idle = 0;
    if (!atomic_compare_exchange_strong(&ring->waiting, &idle, 1)) {
        return -EBUSY;
    }
    pthread_mutex_lock(&ring->lock);
    int filled = 0;
    for (;;) {
        execute_submitted(ring);
        filled = reap(ring, cqes, filled, cqec);
        if (filled >= min_results) {
            break;
        }
        int waited = abs_timeout ? pthread_cond_timedwait(&ring->submitted_cond, &ring->lock, abs_timeout)
                                 : pthread_cond_wait(&ring->submitted_cond, &ring->lock);
        if (waited == ETIMEDOUT) {
            execute_submitted(ring);
            filled = reap(ring, cqes, filled, cqec);
            break;
        }
    }
    pthread_mutex_unlock(&ring->lock);
    atomic_store(&ring->waiting, 0);
    return filled;
}
#endif
