package io.mcctl.master.durability;

import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import java.io.IOException;
import java.util.Map;

/**
 * Where recovery puts committed mappings, keyed by scoped key (tenant, NUL, key): a map of records for the tools
 * ({@link Records}), or a page service's own tables for a starting master, so that a million mappings are not
 * built twice.
 */
public interface MappingTable {

    /** Loads a snapshot's MAPPINGS section into the (empty) table. */
    void load(SnapshotFile.Reader reader) throws IOException;

    /** The committed placement of a scoped key, or null. */
    PlacementRecord get(String scopedKey);

    void put(String scopedKey, String tenant, String key, PlacementRecord placement);

    void remove(String scopedKey);

    /** Mappings as records, in a map the caller may read: what the tools look at. */
    final class Records implements MappingTable {
        private Map<String, MappingRecord> mappings = new java.util.HashMap<>();

        public Map<String, MappingRecord> mappings() {
            return mappings;
        }

        @Override
        public void load(SnapshotFile.Reader reader) throws IOException {
            // Sized once from the index: a million mappings would otherwise rehash the map twenty times.
            SnapshotFile.SectionInfo section = reader.info(SnapshotFile.Section.MAPPINGS);
            if (section != null && section.records() > 0 && section.records() < Integer.MAX_VALUE / 2 && mappings.isEmpty()) {
                mappings = new java.util.HashMap<>((int) section.records() * 4 / 3 + 16);
            }
            reader.read(SnapshotFile.Section.MAPPINGS, MappingRecord.parser(),
                    m -> mappings.put(StateRecovery.scoped(m.getTenantId(), m.getKey()), m));
        }

        @Override
        public PlacementRecord get(String scopedKey) {
            MappingRecord record = mappings.get(scopedKey);
            return record == null ? null : record.getPlacement();
        }

        @Override
        public void put(String scopedKey, String tenant, String key, PlacementRecord placement) {
            mappings.put(scopedKey, MappingRecord.newBuilder().setTenantId(tenant).setKey(key).setPlacement(placement).build());
        }

        @Override
        public void remove(String scopedKey) {
            mappings.remove(scopedKey);
        }

        public long size() {
            return mappings.size();
        }
    }
}
