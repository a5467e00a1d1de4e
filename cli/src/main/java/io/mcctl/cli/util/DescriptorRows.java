package io.mcctl.cli.util;

import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import java.util.LinkedHashMap;
import java.util.Map;

/** Where an object is stored, as a row of a table or JSON report. */
public final class DescriptorRows {

    private DescriptorRows() {
    }

    /** The key with its file, offset, size and checksum. */
    public static Map<String, Object> of(String key, DistributedDiskDescriptor d) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("key", key);
        row.put("file", d.getFilePath());
        row.put("offset", d.getOffset());
        row.put("size", d.getObjectSize());
        row.put("crc32c", String.format("%08x", d.getCrc32C()));
        return row;
    }
}
