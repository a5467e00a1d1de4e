package io.mcctl.storage.io.usrbio;

/**
 * Byte offsets of the USRBIO structs (3FS's {@code hf3fs_usrbio.h}) on 64-bit Linux: callers allocate them and the
 * library fills them, so mcctl must agree with the library on every offset. The stand-in library pins the same
 * numbers with static assertions at its build.
 */
public final class Hf3fsLayout {

    /** {@code struct hf3fs_iov}: base, iovh, id[16], mount_point[256], size, block_size, numa. */
    public static final int IOV_SIZE = 312;
    public static final int IOV_BASE = 0;
    public static final int IOV_HANDLE = 8;
    public static final int IOV_SIZE_FIELD = 288;
    public static final int IOV_BLOCK_SIZE = 296;

    /** {@code struct hf3fs_ior}: an iov, iorh, mount_point[256], for_read, io_depth, priority, timeout, flags. */
    public static final int IOR_SIZE = 600;
    public static final int IOR_HANDLE = 312;
    public static final int IOR_FOR_READ = 576;

    /** {@code struct hf3fs_cqe}: int32 index, int32 reserved, int64 result, userdata. */
    public static final int CQE_SIZE = 24;
    public static final int CQE_INDEX = 0;
    public static final int CQE_RESULT = 8;
    public static final int CQE_USERDATA = 16;

    /** {@code struct timespec}: tv_sec, tv_nsec. */
    public static final int TIMESPEC_SIZE = 16;

    /** Room for a mount point with its terminating zero, as the structs' {@code mount_point[256]}. */
    public static final int MOUNT_POINT_MAX = 256;

    private Hf3fsLayout() {
    }
}
