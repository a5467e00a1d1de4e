package io.mcctl.storage.layout;

/** A node's settings disagree with the layout recorded at the root, or the record cannot be read. */
public final class LayoutMismatchException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public LayoutMismatchException(String message) {
        super(message);
    }
}
