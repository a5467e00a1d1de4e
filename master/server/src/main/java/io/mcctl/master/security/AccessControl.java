package io.mcctl.master.security;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.protocol.SecurityConfigException;
import io.mcctl.master.protocol.TlsFiles;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.net.SocketAddress;
import java.nio.file.Path;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who may call what: every call is checked against the caller's grant (its bearer token from the tokens file,
 * its client certificate, or both) and the RPC's rule in {@link MethodPermissions}, before the service sees the
 * request. A refused call is closed with UNAUTHENTICATED (no or unknown token) or PERMISSION_DENIED and never
 * reaches the service, so it changes nothing; a batch is refused whole when any one of its tenants is not allowed.
 *
 * <p>The caller's grant: with a tokens file, the token's entry, narrowed by the client certificate when that names
 * tenants through {@code mcctl:tenant:} URI SANs; with client certificates and no tokens file, the certificate's
 * own grant ({@link #certificateGrant(X509Certificate, boolean)}); with neither, anyone may do anything (the master's default on
 * loopback), and admin actions are still audited.
 *
 * <p>Thread-safe without a lock on the call path: the token table is an immutable snapshot behind a volatile
 * field; {@link #reloadTokens} swaps it under {@code this}, which guards nothing else.
 */
public final class AccessControl implements ServerInterceptor {

    private static final Logger LOG = LoggerFactory.getLogger(AccessControl.class);
    static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
    private static final String GRANT_SESSION_VALUE = "mcctl.certificate-grant";
    private static final Grant ANYONE = new Grant("anyone (no tokens file, no client certificates)", Role.ADMIN, java.util.Set.of(Grant.ALL_TENANTS));

    /** Why a call was refused: the label of the refusals metric. */
    public enum Refusal {
        missing_token, unknown_token, tenant_not_allowed, role_not_allowed
    }

    /**
     * The check of each request a Session stream carries, bound to the stream's caller. The service finds it in the
     * stream's Context (this interceptor puts it there when it lets the stream open) and asks it about every request
     * before acting on it; a service that finds none must refuse the requests.
     */
    public static final Context.Key<SessionGuard> SESSION_GUARD = Context.key("mcctl-session-guard");

    private final Path tokensFile;
    private final boolean clientCertificates;
    private volatile TokenTable tokens;
    private final AuditLog audit = new AuditLog(System::nanoTime);
    private final Counter refusals = Counter.builder().name("mcctl_master_auth_refusals_total")
            .help("Calls refused before they reached the service, by reason").labelNames("reason").withoutExemplars().build();

    /**
     * @param tokensFile null: no tokens
     * @param clientCertificates whether the transport requires client certificates (mutual TLS)
     */
    public AccessControl(Path tokensFile, boolean clientCertificates) throws SecurityConfigException {
        this.tokensFile = tokensFile;
        this.clientCertificates = clientCertificates;
        this.tokens = tokensFile == null ? null : TokenTable.read(tokensFile);
        for (Refusal r : Refusal.values()) {
            refusals.labelValues(r.name()); // every reason shows, at 0, before its first refusal
        }
    }

    /** Whether a tokens file is configured, which {@link #reloadTokens} reads again. */
    public boolean hasTokensFile() {
        return tokensFile != null;
    }

    /** Whether any call can be refused (tokens or client certificates are configured). */
    public boolean enforcing() {
        return tokensFile != null || clientCertificates;
    }

    public void register(PrometheusRegistry registry) {
        registry.register(refusals);
    }

    public long refusals(Refusal reason) {
        return (long) refusals.labelValues(reason.name()).get();
    }

    public TokenTable tokens() {
        return tokens;
    }

    /**
     * Reads the tokens file again and uses it from the next call on; connections stay open. A file that cannot be
     * used leaves the tokens in force unchanged. Returns the one line that says what happened.
     */
    public synchronized String reloadTokens() {
        if (tokensFile == null) {
            return "no tokens file is configured; nothing to reload";
        }
        try {
            TokenTable next = TokenTable.read(tokensFile);
            tokens = next;
            String line = "tokens reloaded from " + tokensFile + ": " + next.size() + " tokens";
            LOG.info(line);
            return line;
        } catch (SecurityConfigException e) {
            String line = "tokens not reloaded, the " + tokens.size() + " tokens read before stay in force: " + e.getMessage();
            LOG.warn(line);
            return line;
        }
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        String method = call.getMethodDescriptor().getBareMethodName();
        MethodPermissions.Rule rule = MethodPermissions.ruleOf(method);
        Grant grant;
        boolean session = method.equals(MethodPermissions.SESSION);
        if (!enforcing()) {
            if (!rule.admin() && !session) {
                return next.startCall(call, headers); // nothing to check or audit: no cost beyond the lookup
            }
            grant = ANYONE;
        } else {
            Grant certificate = clientCertificates ? certificateGrant(call) : null;
            TokenTable table = tokens;
            if (table != null) {
                String token = bearer(headers.get(AUTHORIZATION));
                if (token == null) {
                    return refuse(call, Status.UNAUTHENTICATED, Refusal.missing_token, method, "",
                            "anonymous" + from(call), "no bearer token; this master wants 'authorization: Bearer <token>' "
                                    + "(mcctl: --token-file FILE or MCCTL_TOKEN)");
                }
                Grant tokenGrant = table.lookup(token);
                if (tokenGrant == null) {
                    return refuse(call, Status.UNAUTHENTICATED, Refusal.unknown_token, method, "", "an unknown token" + from(call),
                            "the token is not in the master's tokens file");
                }
                grant = tokenGrant.and(certificate);
            } else if (certificate == null) {
                grant = new Grant("certificate " + peerName(call), Role.TENANT, java.util.Set.of());
            } else {
                grant = certificate;
            }
        }
        if (session) {
            Permission open = rule.permissionFor(null);
            if (!grant.allows(open)) {
                return refuse(call, Status.PERMISSION_DENIED, Refusal.role_not_allowed, method, "", grant.who() + from(call),
                        "'" + grant.name() + "' has role " + grant.role().label() + ", and " + method + " needs " + needs(open));
            }
            Context context = Context.current().withValue(SESSION_GUARD, new SessionGuard(call, grant));
            return Contexts.interceptCall(context, call, headers, next);
        }
        return new CheckedListener<>(next.startCall(call, headers), call, method, rule, grant);
    }

    /**
     * Checks the requests of one Session stream, each exactly as its unary twin's call is checked (the same rule of
     * {@link MethodPermissions}, the same grant, the same counters and audit lines). Thread-safe: it holds no state of
     * its own beyond the caller.
     */
    public final class SessionGuard {
        private final ServerCall<?, ?> call;
        private final Grant grant;

        SessionGuard(ServerCall<?, ?> call, Grant grant) {
            this.call = call;
            this.grant = grant;
        }

        /** Null when {@code request} (the unary request the stream carries) may go ahead as a call of {@code twinMethod}; else why not. */
        public Status refusal(String twinMethod, Object request) {
            return AccessControl.this.refusal(call, MethodPermissions.SESSION + "/" + twinMethod, MethodPermissions.ruleOf(twinMethod), grant, request);
        }
    }

    /**
     * Null when {@code grant} may make this request of {@code method} under {@code rule}; else the refusal, counted and
     * audited. An allowed admin or monitor request is audited.
     */
    private Status refusal(ServerCall<?, ?> call, String method, MethodPermissions.Rule rule, Grant grant, Object message) {
        Permission permission = rule.permissionFor(message);
        if (!grant.allows(permission)) {
            return record(Status.PERMISSION_DENIED, Refusal.role_not_allowed, method, "", grant.who() + from(call),
                    "'" + grant.name() + "' has role " + grant.role().label() + ", and " + method + " needs " + needs(permission));
        }
        List<String> tenants = rule.tenantsOf(message);
        String checked = null;
        for (int i = 0; i < tenants.size(); i++) {
            String tenant = tenants.get(i);
            if (tenant.equals(checked)) {
                continue; // batches mostly carry one tenant: check it once
            }
            if (!grant.allowsTenant(tenant)) {
                return record(Status.PERMISSION_DENIED, Refusal.tenant_not_allowed, method, tenant, grant.who() + from(call),
                        "'" + grant.name() + "' may not use tenant " + Quoted.of(tenant) + " (it may use " + grant.describeTenants() + ")"
                                + (tenants.size() > 1 ? "; nothing in the batch was done" : ""));
            }
            checked = tenant;
        }
        if (permission == Permission.ADMIN || permission == Permission.MONITOR) {
            audit.write("audit: allowed " + method + describe(message) + " by " + grant.who() + from(call));
        }
        return null;
    }

    /** Waits for the request, checks it, and only then lets the service see it. */
    private final class CheckedListener<Q, R> extends ForwardingServerCallListener.SimpleForwardingServerCallListener<Q> {
        private final ServerCall<Q, R> call;
        private final String method;
        private final MethodPermissions.Rule rule;
        private final Grant grant;
        private boolean refused;

        CheckedListener(ServerCall.Listener<Q> delegate, ServerCall<Q, R> call, String method, MethodPermissions.Rule rule, Grant grant) {
            super(delegate);
            this.call = call;
            this.method = method;
            this.rule = rule;
            this.grant = grant;
        }

        @Override
        public void onMessage(Q message) {
            if (refused) {
                return;
            }
            Status refusal = refusal(call, method, rule, grant, message);
            if (refusal != null) {
                refused = true;
                call.close(refusal, new Metadata());
                return;
            }
            super.onMessage(message);
        }

        @Override
        public void onHalfClose() {
            if (!refused) {
                super.onHalfClose();
            }
        }
    }

    private <Q, R> ServerCall.Listener<Q> refuse(ServerCall<Q, R> call, Status status, Refusal reason, String method, String tenant,
                                                 String who, String message) {
        call.close(record(status, reason, method, tenant, who, message), new Metadata());
        return new ServerCall.Listener<>() {
        };
    }

    /** Counts and audits a refusal; the status to answer it with. */
    private Status record(Status status, Refusal reason, String method, String tenant, String who, String message) {
        refusals.labelValues(reason.name()).inc();
        audit.write("audit: refused " + method + (tenant.isEmpty() ? "" : " for tenant " + Quoted.of(tenant)) + " by " + who + ": "
                + status.getCode() + " " + reason + ": " + message);
        return status.withDescription(message);
    }

    private static String needs(Permission permission) {
        return switch (permission) {
            case TENANT_READ -> "a token of the tenant";
            case TENANT_WRITE -> "the tenant role or admin (a monitor changes nothing)";
            case CLUSTER_READ -> "any known caller";
            case MONITOR -> "role monitor or admin";
            case ADMIN -> "role admin";
        };
    }

    private static String describe(Object message) {
        return message instanceof io.mcctl.master.proto.v1.CheckPagesRequest check && check.getRepair() ? " (repair)" : "";
    }

    private static String from(ServerCall<?, ?> call) {
        SocketAddress remote = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
        return remote == null ? "" : " from " + remote;
    }

    /** The token of an {@code authorization: Bearer <token>} header, or null. */
    static String bearer(String header) {
        if (header == null || header.length() <= 7 || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return null;
        }
        String token = header.substring(7).trim();
        return token.isEmpty() ? null : token;
    }

    /**
     * The grant of the call's client certificate, worked out once per TLS session. With a tokens file only
     * {@code mcctl:tenant:} SANs count (a host name in the CN does not narrow a token); without one the CN counts too.
     */
    private Grant certificateGrant(ServerCall<?, ?> call) {
        SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
        if (session == null) {
            return null;
        }
        boolean commonNameCounts = tokensFile == null;
        Object cached = session.getValue(GRANT_SESSION_VALUE + commonNameCounts);
        if (cached instanceof Grant grant) {
            return grant;
        }
        X509Certificate leaf = leaf(session);
        Grant grant = leaf == null ? null : certificateGrant(leaf, commonNameCounts);
        if (grant != null) {
            session.putValue(GRANT_SESSION_VALUE + commonNameCounts, grant);
        }
        return grant;
    }

    private static X509Certificate leaf(SSLSession session) {
        try {
            Certificate[] chain = session.getPeerCertificates();
            return chain.length > 0 && chain[0] instanceof X509Certificate x509 ? x509 : null;
        } catch (SSLPeerUnverifiedException e) {
            return null;
        }
    }

    private static String peerName(ServerCall<?, ?> call) {
        SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
        X509Certificate leaf = session == null ? null : leaf(session);
        return leaf == null ? "(none)" : "CN=" + commonName(leaf);
    }

    /**
     * What a client certificate grants on its own: the tenants of its {@code mcctl:tenant:} URI SANs and the role of an
     * {@code mcctl:role:} URI SAN (default tenant). Without any tenant SAN, and only when {@code commonNameCounts}, the
     * subject CN is its one tenant. Null when it names no tenant; a grant of nothing when it names a role we do not know.
     */
    static Grant certificateGrant(X509Certificate certificate, boolean commonNameCounts) {
        Set<String> tenants = new LinkedHashSet<>();
        Role role = Role.TENANT;
        try {
            Collection<List<?>> names = certificate.getSubjectAlternativeNames();
            for (List<?> name : names == null ? List.<List<?>>of() : names) {
                if (name.size() < 2 || !(name.get(0) instanceof Integer type) || type != 6 || !(name.get(1) instanceof String uri)) {
                    continue; // type 6 is uniformResourceIdentifier
                }
                if (uri.startsWith(TlsFiles.TENANT_SAN_PREFIX)) {
                    String tenant = uri.substring(TlsFiles.TENANT_SAN_PREFIX.length());
                    if (tenant.equals(Grant.ALL_TENANTS) || KeyRules.checkTenant(tenant) == null) {
                        tenants.add(tenant);
                    }
                } else if (uri.startsWith(TlsFiles.ROLE_SAN_PREFIX)) {
                    Role named = Role.parse(uri.substring(TlsFiles.ROLE_SAN_PREFIX.length()));
                    if (named == null) {
                        // a role we do not know: grant nothing rather than guess, and narrow any token to nothing
                        return new Grant("certificate CN=" + commonName(certificate) + " (unknown role " + uri + ")", Role.TENANT, Set.of());
                    }
                    role = named;
                }
            }
        } catch (java.security.cert.CertificateParsingException e) {
            return null;
        }
        String cn = commonName(certificate);
        if (tenants.isEmpty() && commonNameCounts && cn != null && KeyRules.checkTenant(cn) == null) {
            tenants.add(cn);
        }
        return tenants.isEmpty() ? null : new Grant("certificate CN=" + cn, role, tenants);
    }

    /** The subject's CN, or null. */
    static String commonName(X509Certificate certificate) {
        try {
            List<javax.naming.ldap.Rdn> rdns = new ArrayList<>(new javax.naming.ldap.LdapName(
                    certificate.getSubjectX500Principal().getName()).getRdns());
            for (int i = rdns.size() - 1; i >= 0; i--) {
                if (rdns.get(i).getType().equalsIgnoreCase("CN")) {
                    return rdns.get(i).getValue().toString();
                }
            }
        } catch (javax.naming.InvalidNameException e) {
            return null;
        }
        return null;
    }
}
