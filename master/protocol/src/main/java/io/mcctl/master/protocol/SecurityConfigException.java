package io.mcctl.master.protocol;

/** A tokens file, certificate or key the master or a client cannot use, with the one line that says why. */
public final class SecurityConfigException extends Exception {
    public SecurityConfigException(String message) {
        super(message);
    }
}
