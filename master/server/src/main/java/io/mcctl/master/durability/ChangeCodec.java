package io.mcctl.master.durability;

import io.mcctl.master.service.QuarantinedRange;
import io.mcctl.master.proto.v1.Allocated;
import io.mcctl.master.proto.v1.Committed;
import io.mcctl.master.proto.v1.PendingDropped;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.Released;
import io.mcctl.master.proto.v1.Removed;
import io.mcctl.master.proto.v1.Renewed;
import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;

/**
 * The master's changes and state as the log and snapshots write them: the one place that turns a {@link Change}
 * into its protobuf record and back. The two hot records are also written from their fields by
 * {@link WalRecordEncoder}, byte for byte what this gives.
 */
public final class ChangeCodec {

    private ChangeCodec() {
    }

    /** The change a log record holds. */
    public static Change decode(WalRecord record) {
        return switch (record.getChangeCase()) {
            case ALLOCATED -> {
                Allocated a = record.getAllocated();
                yield new Change.Allocated(a.getTenantId(), a.getKey(), placement(a.getPlacement()), a.getDeadlineMs(), a.getOverwrite(), a.getPin());
            }
            case COMMITTED -> {
                Committed c = record.getCommitted();
                yield new Change.Committed(c.getTenantId(), c.getKey(), placement(c.getPlacement()),
                        c.hasReplaced() ? placement(c.getReplaced()) : null, c.hasReplaced() ? c.getReplacedReleaseMs() : 0, c.getPinned(),
                        c.hasKvBlocks() ? kvBlocks(c.getKvBlocks()) : null, hashes(c.getReplacedBlockHashesList()));
            }
            case PENDING_DROPPED -> {
                PendingDropped d = record.getPendingDropped();
                Change.DropReason reason = switch (d.getReason()) {
                    case FREED -> Change.DropReason.FREED;
                    case EXPIRED -> Change.DropReason.EXPIRED;
                    case DROPPED -> Change.DropReason.DROPPED;
                    case UNRECOGNIZED -> throw new IllegalArgumentException("a dropped allocation with reason " + d.getReasonValue()
                            + ", which this mcctl does not know");
                };
                yield new Change.AllocationDropped(d.getTenantId(), d.getKey(), placement(d.getPlacement()), reason, d.getReleaseMs());
            }
            case REMOVED -> {
                Removed r = record.getRemoved();
                Change.RemoveReason reason = switch (r.getReason()) {
                    case REMOVED -> Change.RemoveReason.REMOVED;
                    case EVICTED_WATERMARK -> Change.RemoveReason.EVICTED_WATERMARK;
                    case EVICTED_ALLOCATION -> Change.RemoveReason.EVICTED_ALLOCATION;
                    case EVICTED_QUOTA -> Change.RemoveReason.EVICTED_QUOTA;
                    case UNRECOGNIZED -> throw new IllegalArgumentException("a removal with reason " + r.getReasonValue()
                            + ", which this mcctl does not know");
                };
                yield new Change.Removed(r.getTenantId(), r.getKey(), placement(r.getPlacement()), r.getReleaseMs(), reason,
                        hashes(r.getBlockHashesList()));
            }
            case RELEASED -> {
                Released r = record.getReleased();
                yield new Change.Released(r.getBucket(), r.getFirstPage(), r.getPages());
            }
            case QUOTA_SET -> new Change.QuotaSet(record.getQuotaSet().getTenantId(), record.getQuotaSet().getMaxBytes());
            case RENEWED -> {
                Renewed r = record.getRenewed();
                yield new Change.Renewed(r.getTenantId(), r.getKey(), placement(r.getPlacement()), r.getDeadlineMs());
            }
            case LAYOUT_GROWN -> new Change.LayoutGrown(record.getLayoutGrown().getPreviousBucketSize(), record.getLayoutGrown().getBucketSize());
            case PROMOTION_QUEUED -> {
                io.mcctl.master.proto.v1.PromotionQueued q = record.getPromotionQueued();
                yield promotionTask(q);
            }
            case PROMOTION_ENDED -> {
                io.mcctl.master.proto.v1.PromotionEnded e = record.getPromotionEnded();
                Change.PromotionOutcome outcome = switch (e.getOutcome()) {
                    case SUCCEEDED -> Change.PromotionOutcome.SUCCEEDED;
                    case FAILED -> Change.PromotionOutcome.FAILED;
                    case CANCELLED -> Change.PromotionOutcome.CANCELLED;
                    case UNRECOGNIZED -> throw new IllegalArgumentException("a promotion that ended with outcome " + e.getOutcomeValue()
                            + ", which this mcctl does not know");
                };
                yield new Change.PromotionEnded(e.getTenantId(), e.getKey(), placement(e.getPlacement()), outcome);
            }
            case RESERVED -> reservation(record.getReserved());
            case RESERVATION_CLOSED -> {
                io.mcctl.master.proto.v1.ReservationClosed c = record.getReservationClosed();
                yield new Change.ReservationClosed(c.getBucket(), c.getFirstPage(), c.getPages(), c.getOpenUntilMs());
            }
            case KV_EVENTS_SEALED -> {
                io.mcctl.master.proto.v1.KvEventsSealed sealed = record.getKvEventsSealed();
                java.util.List<Change.TenantBatch> batches = new java.util.ArrayList<>(sealed.getBatchesCount());
                for (io.mcctl.master.proto.v1.TenantEventBatch b : sealed.getBatchesList()) {
                    batches.add(new Change.TenantBatch(b.getTenantId(), b.getBatch(), b.getEvents()));
                }
                yield new Change.EventsSealed(sealed.getFirstSequence(), batches, sealed.getSealedMs());
            }
            case CHANGE_NOT_SET -> throw new IllegalArgumentException("a change of a kind this mcctl does not know (written by a newer one?)");
        };
    }

    /** A change as a log record, without its sequence and time (the log adds those). */
    public static WalRecord.Builder encode(Change change) {
        WalRecord.Builder record = WalRecord.newBuilder();
        if (change instanceof Change.Allocated a) {
            record.setAllocated(Allocated.newBuilder().setTenantId(a.tenant()).setKey(a.key()).setPlacement(record(a.placement()))
                    .setDeadlineMs(a.deadlineMs()).setOverwrite(a.overwrite()).setPin(a.pin()));
        } else if (change instanceof Change.Committed c) {
            Committed.Builder committed = Committed.newBuilder().setTenantId(c.tenant()).setKey(c.key()).setPlacement(record(c.placement()))
                    .setPinned(c.pinned());
            if (c.replaced() != null) {
                committed.setReplaced(record(c.replaced())).setReplacedReleaseMs(c.replacedReleaseMs());
            }
            if (c.blocks() != null) {
                committed.setKvBlocks(kvBlocksRecord(c.blocks()));
            }
            if (c.replacedBlockHashes() != null) {
                for (long h : c.replacedBlockHashes()) {
                    committed.addReplacedBlockHashes(h);
                }
            }
            record.setCommitted(committed);
        } else if (change instanceof Change.AllocationDropped d) {
            PendingDropped.Reason reason = switch (d.reason()) {
                case FREED -> PendingDropped.Reason.FREED;
                case EXPIRED -> PendingDropped.Reason.EXPIRED;
                case DROPPED -> PendingDropped.Reason.DROPPED;
            };
            record.setPendingDropped(PendingDropped.newBuilder().setTenantId(d.tenant()).setKey(d.key()).setPlacement(record(d.placement()))
                    .setReason(reason).setReleaseMs(d.releaseMs()));
        } else if (change instanceof Change.Removed r) {
            Removed.Reason reason = switch (r.reason()) {
                case REMOVED -> Removed.Reason.REMOVED;
                case EVICTED_WATERMARK -> Removed.Reason.EVICTED_WATERMARK;
                case EVICTED_ALLOCATION -> Removed.Reason.EVICTED_ALLOCATION;
                case EVICTED_QUOTA -> Removed.Reason.EVICTED_QUOTA;
            };
            Removed.Builder removed = Removed.newBuilder().setTenantId(r.tenant()).setKey(r.key()).setPlacement(record(r.placement()))
                    .setReleaseMs(r.releaseMs()).setReason(reason);
            if (r.blockHashes() != null) {
                for (long h : r.blockHashes()) {
                    removed.addBlockHashes(h);
                }
            }
            record.setRemoved(removed);
        } else if (change instanceof Change.Released r) {
            record.setReleased(Released.newBuilder().setBucket(r.bucket()).setFirstPage(r.firstPage()).setPages(r.pages()));
        } else if (change instanceof Change.QuotaSet q) {
            record.setQuotaSet(io.mcctl.master.proto.v1.QuotaSet.newBuilder().setTenantId(q.tenant()).setMaxBytes(q.maxBytes()));
        } else if (change instanceof Change.Renewed r) {
            record.setRenewed(Renewed.newBuilder().setTenantId(r.tenant()).setKey(r.key()).setPlacement(record(r.placement()))
                    .setDeadlineMs(r.deadlineMs()));
        } else if (change instanceof Change.LayoutGrown g) {
            record.setLayoutGrown(io.mcctl.master.proto.v1.LayoutGrown.newBuilder().setPreviousBucketSize(g.previousBucketSize())
                    .setBucketSize(g.bucketSize()));
        } else if (change instanceof Change.PromotionQueued q) {
            record.setPromotionQueued(promotionRecord(q));
        } else if (change instanceof Change.PromotionEnded e) {
            io.mcctl.master.proto.v1.PromotionEnded.Outcome outcome = switch (e.outcome()) {
                case SUCCEEDED -> io.mcctl.master.proto.v1.PromotionEnded.Outcome.SUCCEEDED;
                case FAILED -> io.mcctl.master.proto.v1.PromotionEnded.Outcome.FAILED;
                case CANCELLED -> io.mcctl.master.proto.v1.PromotionEnded.Outcome.CANCELLED;
            };
            record.setPromotionEnded(io.mcctl.master.proto.v1.PromotionEnded.newBuilder().setTenantId(e.tenant()).setKey(e.key())
                    .setPlacement(record(e.placement())).setOutcome(outcome));
        } else if (change instanceof Change.Reserved r) {
            record.setReserved(reservationRecord(r));
        } else if (change instanceof Change.ReservationClosed c) {
            record.setReservationClosed(io.mcctl.master.proto.v1.ReservationClosed.newBuilder().setBucket(c.bucket())
                    .setFirstPage(c.firstPage()).setPages(c.pages()).setOpenUntilMs(c.openUntilMs()));
        } else if (change instanceof Change.EventsSealed sealed) {
            io.mcctl.master.proto.v1.KvEventsSealed.Builder b = io.mcctl.master.proto.v1.KvEventsSealed.newBuilder()
                    .setFirstSequence(sealed.firstSequence()).setSealedMs(sealed.sealedMs());
            for (Change.TenantBatch batch : sealed.batches()) {
                b.addBatches(io.mcctl.master.proto.v1.TenantEventBatch.newBuilder().setTenantId(batch.tenant()).setBatch(batch.batch())
                        .setEvents(batch.events()));
            }
            record.setKvEventsSealed(b);
        } else {
            throw new IllegalArgumentException("no record for change " + change);
        }
        return record;
    }

    /** An object's engine KV blocks as the log writes them. */
    public static io.mcctl.master.proto.v1.KvBlocksRecord kvBlocksRecord(io.mcctl.master.service.KvBlocks k) {
        io.mcctl.master.proto.v1.KvBlocksRecord.Builder b = io.mcctl.master.proto.v1.KvBlocksRecord.newBuilder()
                .setBlockSize(k.blockSize()).setLoraName(k.loraName());
        for (long h : k.blockHashes()) {
            b.addBlockHashes(h);
        }
        if (k.hasParent()) {
            b.setParentBlockHash(k.parentBlockHash());
        }
        for (int t : k.tokenIds()) {
            b.addTokenIds(t);
        }
        return b.build();
    }

    public static io.mcctl.master.service.KvBlocks kvBlocks(io.mcctl.master.proto.v1.KvBlocksRecord r) {
        int[] tokens = new int[r.getTokenIdsCount()];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = r.getTokenIds(i);
        }
        long[] hashes = hashes(r.getBlockHashesList());
        return new io.mcctl.master.service.KvBlocks(hashes == null ? new long[0] : hashes, r.hasParentBlockHash(), r.getParentBlockHash(),
                r.getBlockSize(), tokens, r.getLoraName());
    }

    /** Block hashes as a record lists them; null for none (as a change without them holds). */
    public static long[] hashes(java.util.List<Long> list) {
        if (list.isEmpty()) {
            return null;
        }
        long[] hashes = new long[list.size()];
        for (int i = 0; i < hashes.length; i++) {
            hashes[i] = list.get(i);
        }
        return hashes;
    }

    /** A reservation as the log and snapshots write it. */
    public static io.mcctl.master.proto.v1.Reserved reservationRecord(Change.Reserved r) {
        return io.mcctl.master.proto.v1.Reserved.newBuilder().setBucket(r.bucket()).setFirstPage(r.firstPage()).setPages(r.pages())
                .setOpenUntilMs(r.openUntilMs()).setHoldUntilMs(r.holdUntilMs()).build();
    }

    public static Change.Reserved reservation(io.mcctl.master.proto.v1.Reserved r) {
        return new Change.Reserved(r.getBucket(), r.getFirstPage(), r.getPages(), r.getOpenUntilMs(), r.getHoldUntilMs());
    }

    public static PlacementRecord record(Placement p) {
        return PlacementRecord.newBuilder().setBucket(p.bucket()).setOffset(p.offset()).setSize(p.size()).setCrc32C(p.crc32c()).build();
    }

    public static Placement placement(PlacementRecord r) {
        return new Placement(r.getBucket(), r.getOffset(), r.getSize(), r.getCrc32C());
    }

    /** A snapshot's in-flight allocation. */
    public static PendingRecord pendingRecord(Change.Allocated a) {
        return PendingRecord.newBuilder().setTenantId(a.tenant()).setKey(a.key()).setPlacement(record(a.placement()))
                .setDeadlineMs(a.deadlineMs()).setOverwrite(a.overwrite()).setPin(a.pin()).build();
    }

    public static Change.Allocated inFlight(PendingRecord p) {
        return new Change.Allocated(p.getTenantId(), p.getKey(), placement(p.getPlacement()), p.getDeadlineMs(), p.getOverwrite(), p.getPin());
    }

    public static QuarantineRecord quarantineRecord(QuarantinedRange q) {
        return QuarantineRecord.newBuilder().setBucket(q.bucket()).setFirstPage(q.firstPage()).setPages(q.pages()).setReleaseMs(q.releaseMs()).build();
    }

    public static QuarantinedRange quarantined(QuarantineRecord q) {
        return new QuarantinedRange(q.getBucket(), q.getFirstPage(), q.getPages(), q.getReleaseMs());
    }

    /** A promotion task, as the log and a snapshot's meta hold it. */
    public static io.mcctl.master.proto.v1.PromotionQueued promotionRecord(Change.PromotionQueued q) {
        return io.mcctl.master.proto.v1.PromotionQueued.newBuilder().setTenantId(q.tenant()).setKey(q.key())
                .setPlacement(record(q.placement())).setQueuedMs(q.queuedMs()).build();
    }

    public static Change.PromotionQueued promotionTask(io.mcctl.master.proto.v1.PromotionQueued q) {
        return new Change.PromotionQueued(q.getTenantId(), q.getKey(), placement(q.getPlacement()), q.getQueuedMs());
    }
}
