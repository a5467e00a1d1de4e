package io.mcctl.master.service;

import java.util.Arrays;

/**
 * The engine KV blocks one object holds, as its writer named them at notify: what a KV-aware router needs to credit the
 * shared tier with a prefix (docs/wire-protocol.md, "KV events"). The master keeps only {@link #blockHashes} with the
 * mapping (to announce its removal); the rest is logged with the commit and announced once.
 *
 * @param blockHashes     each block's hash as an unsigned 64-bit number, in chain order (at least one)
 * @param hasParent       whether {@code parentBlockHash} is set (the first block continues a prefix)
 * @param parentBlockHash the hash of the block before the first
 * @param blockSize       tokens per block (0: not given)
 * @param tokenIds        the tokens of all the blocks (empty when not given)
 * @param loraName        the LoRA adapter's name (empty: none)
 */
public record KvBlocks(long[] blockHashes, boolean hasParent, long parentBlockHash, int blockSize, int[] tokenIds, String loraName) {

    /** Most blocks one object may name. */
    public static final int MAX_BLOCKS = 1024;
    /** Largest block size accepted. */
    public static final int MAX_BLOCK_SIZE = 1 << 20;

    public KvBlocks {
        tokenIds = tokenIds == null ? new int[0] : tokenIds;
        loraName = loraName == null ? "" : loraName;
    }

    /** Why these blocks cannot be taken (one line naming the value and what is allowed), or null. */
    public String problem() {
        if (blockHashes == null || blockHashes.length == 0) {
            return "kv_blocks has no block_hashes (give at least one, or no kv_blocks entry for the key)";
        }
        if (blockHashes.length > MAX_BLOCKS) {
            return "kv_blocks has " + blockHashes.length + " block_hashes; at most " + MAX_BLOCKS + " are allowed per object";
        }
        if (blockSize < 0 || blockSize > MAX_BLOCK_SIZE) {
            return "kv_blocks block_size " + blockSize + " is out of range; allowed are 0 to " + MAX_BLOCK_SIZE;
        }
        if (tokenIds.length != 0 && (long) blockSize * blockHashes.length != tokenIds.length) {
            return "kv_blocks has " + tokenIds.length + " token_ids for " + blockHashes.length + " blocks of block_size " + blockSize
                    + "; give none, or block_size per block";
        }
        return null;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KvBlocks k && Arrays.equals(blockHashes, k.blockHashes) && hasParent == k.hasParent
                && parentBlockHash == k.parentBlockHash && blockSize == k.blockSize && Arrays.equals(tokenIds, k.tokenIds)
                && loraName.equals(k.loraName);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(blockHashes) * 31 + blockSize;
    }

    @Override
    public String toString() {
        return "KvBlocks" + Arrays.toString(blockHashes);
    }
}
