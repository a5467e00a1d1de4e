package io.mcctl.master.durability;

import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.Placement;
import java.io.IOException;
import java.util.List;

/**
 * Recovery straight into a page service that is about to serve: the snapshot's mappings are decoded on every core
 * into the service's own tables ({@link PageService.Restorer}), the log replays onto them, and
 * {@link PageService.Restorer#finish} claims the pages. Not thread-safe: recovery's one thread drives it.
 */
public final class ServiceMappingTable implements MappingTable {

    private final PageService pages;
    private final PageService.Restorer restorer;

    public ServiceMappingTable(PageService pages) {
        this.pages = pages;
        this.restorer = pages.restorer();
    }

    public PageService pages() {
        return pages;
    }

    public PageService.Restorer restorer() {
        return restorer;
    }

    @Override
    public void load(SnapshotFile.Reader reader) throws IOException {
        final class Share implements SnapshotFile.RawRecordVisitor {
            final PageService.Batch batch = restorer.newBatch();
            final MappingRecordDecoder decoder = new MappingRecordDecoder();

            @Override
            public void record(java.nio.ByteBuffer bytes, int offset, int length) throws com.google.protobuf.InvalidProtocolBufferException {
                decoder.decode(bytes, offset, length, batch::add);
            }
        }
        List<Share> shares = reader.readShares(SnapshotFile.Section.MAPPINGS, Runtime.getRuntime().availableProcessors(), i -> new Share());
        restorer.putAll(shares.stream().map(share -> share.batch).toList());
    }

    @Override
    public PlacementRecord get(String scopedKey) {
        Placement p = restorer.get(scopedKey);
        return p == null ? null : PlacementRecord.newBuilder().setBucket(p.bucket()).setOffset(p.offset()).setSize(p.size())
                .setCrc32C(p.crc32c()).build();
    }

    @Override
    public void put(String scopedKey, String tenant, String key, PlacementRecord placement) {
        restorer.put(scopedKey, new Placement(placement.getBucket(), placement.getOffset(), placement.getSize(), placement.getCrc32C()));
    }

    @Override
    public void remove(String scopedKey) {
        restorer.remove(scopedKey);
    }
}
