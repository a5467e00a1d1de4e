package io.mcctl.storage.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class MountInfoTest {

    private static final List<String> SAMPLE = List.of(
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro",
            "25 22 0:23 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
            "112 22 0:48 / /3fs/stage rw,nosuid,nodev,relatime shared:60 - fuse.hf3fs hf3fs.stage rw,user_id=0,group_id=0",
            "130 22 0:52 / /mnt/kv\\040cache rw,relatime - tmpfs tmpfs rw,size=1024k",
            "not a mountinfo line");

    @Test
    void a_3fs_line_gives_its_mount_point_type_and_source() {
        MountInfo.Mount mount = MountInfo.parseLine(SAMPLE.get(2)).orElseThrow();
        assertEquals("/3fs/stage", mount.mountPoint());
        assertEquals("fuse.hf3fs", mount.fsType());
        assertEquals("hf3fs.stage", mount.source());
    }

    @Test
    void a_line_without_optional_fields_still_parses() {
        MountInfo.Mount mount = MountInfo.parseLine(SAMPLE.get(3)).orElseThrow();
        assertEquals("tmpfs", mount.fsType());
    }

    @Test
    void escaped_spaces_in_mount_points_are_decoded() {
        assertEquals("/mnt/kv cache", MountInfo.parseLine(SAMPLE.get(3)).orElseThrow().mountPoint());
        assertEquals("a\tb\\c", MountInfo.unescape("a\\011b\\134c"));
        assertEquals("trailing\\04", MountInfo.unescape("trailing\\04"));
    }

    @Test
    void lines_of_another_shape_are_left_out() {
        assertEquals(4, MountInfo.parse(SAMPLE).size());
    }

    @Test
    void the_longest_mount_point_prefix_holds_a_path() {
        List<MountInfo.Mount> mounts = MountInfo.parse(SAMPLE);
        assertEquals("/3fs/stage", MountInfo.mountOf(mounts, Path.of("/3fs/stage/mooncake")).orElseThrow().mountPoint());
        assertEquals("/", MountInfo.mountOf(mounts, Path.of("/3fs/stagex/mooncake")).orElseThrow().mountPoint());
        assertEquals("/mnt/kv cache", MountInfo.mountOf(mounts, Path.of("/mnt/kv cache/root")).orElseThrow().mountPoint());
        assertEquals("/3fs/stage", MountInfo.mountOf(mounts, Path.of("/3fs/stage")).orElseThrow().mountPoint());
    }

    @Test
    void a_later_mount_at_the_same_place_hides_the_earlier_one() {
        List<MountInfo.Mount> mounts = MountInfo.parse(List.of(
                "40 22 0:30 / /data rw - ext4 /dev/sdb1 rw",
                "41 40 0:31 / /data rw - fuse.hf3fs hf3fs.prod rw"));
        assertEquals("fuse.hf3fs", MountInfo.mountOf(mounts, Path.of("/data/root")).orElseThrow().fsType());
    }

    @Test
    void no_mount_holds_a_path_when_there_is_no_root_mount() {
        assertTrue(MountInfo.mountOf(MountInfo.parse(List.of(SAMPLE.get(2))), Path.of("/elsewhere")).isEmpty());
    }

    @Test
    void the_open_file_soft_limit_is_read_from_proc_limits() {
        List<String> limits = List.of(
                "Limit                     Soft Limit           Hard Limit           Units",
                "Max cpu time              unlimited            unlimited            seconds",
                "Max open files            1024                 1048576              files");
        assertEquals(OptionalLong.of(1024), MountValidator.openFilesSoftLimit(limits));
        assertEquals(OptionalLong.of(Long.MAX_VALUE),
                MountValidator.openFilesSoftLimit(List.of("Max open files            unlimited            unlimited            files")));
        assertTrue(MountValidator.openFilesSoftLimit(List.of("Max processes 10 10 processes")).isEmpty());
    }
}
