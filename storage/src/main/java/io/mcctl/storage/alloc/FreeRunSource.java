package io.mcctl.storage.alloc;

/** Anything that can list its runs of free pages, in page order: a live allocator or a bitmap read from disk. */
public interface FreeRunSource {

    /** Receives one maximal run of free pages. */
    @FunctionalInterface
    interface FreeRunConsumer {
        void accept(long firstPage, long length);
    }

    long pageCount();

    /** Calls {@code consumer} for every maximal run of free pages, lowest first. */
    void forEachFreeRun(FreeRunConsumer consumer);
}
