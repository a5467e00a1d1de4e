package io.mcctl.master.durability;

/** A state directory another master holds: the message is {@link StateLock.Holder#describe()}. */
public final class StateInUseException extends java.io.IOException {
    private static final long serialVersionUID = 1L;

    private final transient StateLock.Holder holder;

    public StateInUseException(StateLock.Holder holder) {
        super(holder.describe());
        this.holder = holder;
    }

    public StateLock.Holder holder() {
        return holder;
    }
}
