/*
 * The USRBIO ABI that mcctl calls: the structs and functions of 3FS's libhf3fs_api_shared.so, declared by
 * mcctl from their documented signatures and layouts (3FS's hf3fs_usrbio.h and UsrbIo.md) for the stand-in
 * library in this folder. This header is NOT 3FS's and the stand-in built from it is NOT 3FS: it runs IOs
 * on ordinary files so that mcctl's USRBIO path can be tested on any machine. It declares only the
 * functions mcctl uses; the real library has more (iovopen, iovwrap, hardlink, punchhole, device iovs).
 *
 * Layouts (LP64, x86-64 and aarch64): struct hf3fs_iov is 312 bytes, struct hf3fs_ior 600, struct
 * hf3fs_cqe 24; the offsets are pinned by the static assertions in hf3fs_standin.c and mirrored by the Java
 * binding (io.mcctl.storage.io.usrbio.Hf3fsLayout) and the Python one (mcctl/_usrbio.py).
 */
#ifndef MCCTL_HF3FS_USRBIO_ABI_H
#define MCCTL_HF3FS_USRBIO_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Shared memory that IOs read into and write from; filled by hf3fs_iovcreate. */
struct hf3fs_iov {
    uint8_t *base;
    void *iovh;
    char id[16];
    char mount_point[256];
    size_t size;
    size_t block_size;
    int numa;
};

/* A ring of IOs that only reads or only writes; filled by hf3fs_iorcreate4. */
struct hf3fs_ior {
    struct hf3fs_iov iov;
    void *iorh;
    char mount_point[256];
    bool for_read;
    int io_depth;
    int priority;
    int timeout;
    uint64_t flags;
};

/* One completed IO: result is the bytes done or -errno; userdata is what hf3fs_prep_io was given. */
struct hf3fs_cqe {
    int32_t index;
    int32_t reserved;
    int64_t result;
    const void *userdata;
};

bool hf3fs_is_hf3fs(int fd);
int hf3fs_extract_mount_point(char *hf3fs_mount_point, int size, const char *path);

int hf3fs_iovcreate(struct hf3fs_iov *iov, const char *hf3fs_mount_point, size_t size, size_t block_size, int numa);
void hf3fs_iovdestroy(struct hf3fs_iov *iov);

size_t hf3fs_ior_size(int entries);
int hf3fs_iorcreate(struct hf3fs_ior *ior, const char *hf3fs_mount_point, int entries, bool for_read, int io_depth, int numa);
int hf3fs_iorcreate2(struct hf3fs_ior *ior, const char *hf3fs_mount_point, int entries, bool for_read, int io_depth, int priority,
                     int numa);
int hf3fs_iorcreate3(struct hf3fs_ior *ior, const char *hf3fs_mount_point, int entries, bool for_read, int io_depth, int priority,
                     int timeout, int numa);
int hf3fs_iorcreate4(struct hf3fs_ior *ior, const char *hf3fs_mount_point, int entries, bool for_read, int io_depth, int timeout,
                     int numa, uint64_t flags);
void hf3fs_iordestroy(struct hf3fs_ior *ior);

int hf3fs_reg_fd(int fd, uint64_t flags);
void hf3fs_dereg_fd(int fd);

int hf3fs_io_entries(const struct hf3fs_ior *ior);
int hf3fs_prep_io(const struct hf3fs_ior *ior, const struct hf3fs_iov *iov, bool read, void *ptr, int fd, size_t off, uint64_t len,
                  const void *userdata);
int hf3fs_submit_ios(const struct hf3fs_ior *ior);
int hf3fs_wait_for_ios(const struct hf3fs_ior *ior, struct hf3fs_cqe *cqes, int cqec, int min_results,
                       const struct timespec *abs_timeout);

#ifdef __cplusplus
}
#endif

#endif
