# fish completion for mcctl, generated from its command model: mcctl completion fish > ~/.config/fish/completions/mcctl.fish

set -g __mcctl_commands 'master' 'master start' 'master status' 'offload' 'get' 'rm' 'ls' 'stat' 'stats' 'top' 'snapshot' 'snapshot create' 'snapshot list' 'snapshot inspect' 'snapshot verify' 'snapshot diff' 'snapshot export' 'snapshot recover' 'snapshot wal' 'snapshot wal dump' 'fsck' 'bitmap' 'bitmap inspect' 'mount' 'mount validate' 'quota' 'quota set' 'events' 'events tail' 'layout' 'layout grow' 'node' 'node start' 'node status' 'node offload' 'node get' 'promote' 'promotions' 'demo' 'demo owner-death' 'bench' 'bench allocator' 'bench master' 'bench io' 'bench restart' 'bench fsck' 'bench cache' 'bench crossnode' 'bench layout' 'bench failover' 'bench promotion' 'bench pages' 'bench chaos' 'shell' 'config' 'config show' 'completion'

# The command the words typed so far name ("" for mcctl itself): options are skipped.
function __mcctl_command
    set -l path ""
    for word in (commandline -opc)[2..-1]
        string match -q -- '-*' $word; and continue
        set -l candidate (string trim -- "$path $word")
        contains -- $candidate $__mcctl_commands; or break
        set path $candidate
    end
    echo $path
end

function __mcctl_at
    set -l command (__mcctl_command)
    test "$command" = "$argv"
end


# mcctl
complete -c mcctl -n '__mcctl_at' -f
complete -c mcctl -n '__mcctl_at' -a 'master' -d 'Run the master.'
complete -c mcctl -n '__mcctl_at' -a 'offload' -d 'Write a file (or stdin with \'-\') into the tier under KEY, or with --batch every regular file of a directory under its file name.'
complete -c mcctl -n '__mcctl_at' -a 'get' -d 'Read KEY\'s object to stdout (or --out FILE), or with --batch every key listed in KEYS_FILE into --out DIR, one file per key (the key URL-encoded as the file name).'
complete -c mcctl -n '__mcctl_at' -a 'rm' -d 'Remove keys.'
complete -c mcctl -n '__mcctl_at' -a 'ls' -d 'List a tenant\'s keys in key order, with size and place.'
complete -c mcctl -n '__mcctl_at' -a 'stat' -d 'Show a key\'s replicas, best first: type, status, file, offset, size, bucket, pages, CRC32C.'
complete -c mcctl -n '__mcctl_at' -a 'stats' -d 'Show the tier\'s state: pages used of all and per bucket, allocations in flight, quarantined pages, mappings and tenants; eviction on or off with its watermarks and totals; how long ago the least recently used object was used; the hit ratio of mapping lookups overall and per tenant, biggest tenants first; and why the master refuses changes, when it does.'
complete -c mcctl -n '__mcctl_at' -a 'top' -d 'Show the tier\'s state refreshed every interval: pages used per bucket as a grid of small bars and a histogram, the hit ratio since start and over the last interval, page allocations, evictions and lookups per second, and the biggest tenants.'
complete -c mcctl -n '__mcctl_at' -a 'snapshot' -d 'Create, list, inspect, verify, diff and export master snapshots.'
complete -c mcctl -n '__mcctl_at' -a 'fsck' -d 'Check the page state of a live master, or offline of saved master state, against the bucket files.'
complete -c mcctl -n '__mcctl_at' -a 'bitmap' -d 'Inspect page bitmaps.'
complete -c mcctl -n '__mcctl_at' -a 'mount' -d 'Check a node\'s mount of the shared root.'
complete -c mcctl -n '__mcctl_at' -a 'quota' -d 'Per-tenant byte quotas (admin).'
complete -c mcctl -n '__mcctl_at' -a 'events' -d 'The KV events the master publishes for routers.'
complete -c mcctl -n '__mcctl_at' -a 'layout' -d 'The root\'s bucket layout (admin).'
complete -c mcctl -n '__mcctl_at' -a 'node' -d 'Nodes: the per-host process that registers with the master, and offloads and reads through one.'
complete -c mcctl -n '__mcctl_at' -a 'promote' -d 'Queue objects for promotion into the DRAM tier now, whatever their reads (the master also queues an object read promotion_reads times within its admission window).'
complete -c mcctl -n '__mcctl_at' -a 'promotions' -d 'List the promotion tasks, oldest first: queued ones (any node may take them) and ones a node is copying, with the DRAM tier\'s totals.'
complete -c mcctl -n '__mcctl_at' -a 'demo' -d 'Demonstrations an operator can run on one machine, with real processes on a temporary root.'
complete -c mcctl -n '__mcctl_at' -a 'bench' -d 'Benchmarks; figures belong in docs/benchmarks.md.'
complete -c mcctl -n '__mcctl_at' -a 'shell' -d 'Interactive shell: run mcctl commands one per line in one JVM, without the leading \'mcctl\'.'
complete -c mcctl -n '__mcctl_at' -a 'config' -d 'Show the effective settings.'
complete -c mcctl -n '__mcctl_at' -a 'completion' -d 'Print the completion script for SHELL.'
complete -c mcctl -n '__mcctl_at' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
complete -c mcctl -n '__mcctl_at' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at' -s V -l version -d 'Print version information and exit.'

# mcctl master
complete -c mcctl -n '__mcctl_at master' -f
complete -c mcctl -n '__mcctl_at master' -a 'start' -d 'Run the master in the foreground: page RPCs over gRPC, Prometheus metrics and health over HTTP.'
complete -c mcctl -n '__mcctl_at master' -a 'status' -d 'Show the masters of a high-availability cluster from etcd: the leader, every standby, the log record each has applied and how far it is behind the leader (docs/ha.md).'
complete -c mcctl -n '__mcctl_at master' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at master' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at master' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl master start
complete -c mcctl -n '__mcctl_at master start' -f
complete -c mcctl -n '__mcctl_at master start' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at master start' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at master start' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
complete -c mcctl -n '__mcctl_at master start' -l config -r -F -d 'YAML file of settings (default: $MCCTL_CONFIG, if set).'
complete -c mcctl -n '__mcctl_at master start' -l page-mode -x -d 'page mode of offloads through a node: true writes pages of the shared bucket files (DISTRIBUTED_DISK, no owner), false one file per key under the node\'s --local-disk (LOCAL_DISK, owned by the node); a node\'s setting, the master serves both [env MOONCAKE_DISTRIBUTED_PAGE_MODE; default true]'
complete -c mcctl -n '__mcctl_at master start' -l root -x -d 'directory that holds the bucket files, mounted at the same path on every node [env MOONCAKE_DISTRIBUTED_ROOT_DIR; default ./mooncake-data]'
complete -c mcctl -n '__mcctl_at master start' -l fs-type -x -d 'filesystem under the root: hf3fs (3FS) or posix (any local or shared POSIX directory) [env MOONCAKE_DISTRIBUTED_FS_TYPE; default posix]'
complete -c mcctl -n '__mcctl_at master start' -l bucket-count -x -d 'number of bucket files [env MOONCAKE_DISTRIBUTED_BUCKET_COUNT; default 256]'
complete -c mcctl -n '__mcctl_at master start' -l page-size -x -d 'bytes per page, the unit of allocation [env MOONCAKE_DISTRIBUTED_PAGE_SIZE; default 64KiB]'
complete -c mcctl -n '__mcctl_at master start' -l bucket-size -x -d 'bytes per bucket file [env MOONCAKE_DISTRIBUTED_BUCKET_SIZE; default 4GiB]'
complete -c mcctl -n '__mcctl_at master start' -l health-check -x -d 'run the checks of mcctl mount validate before laying out the root; any FAIL stops the master [env MOONCAKE_DISTRIBUTED_HEALTH_CHECK; default false]'
complete -c mcctl -n '__mcctl_at master start' -l preallocate -x -d 'reserve real space for every bucket file when the master starts (fallocate), so that a full filesystem shows at start, not as failed writes later [env MOONCAKE_DISTRIBUTED_PREALLOCATE_BUCKETS; default false]'
complete -c mcctl -n '__mcctl_at master start' -l io -x -d 'how bucket-file bytes move: posix (positional reads and writes through the kernel), usrbio (3FS\'s USRBIO rings, past FUSE; refused at start when the library, a function of it or a 3FS mount under the root is missing), or auto (usrbio when fs_type is hf3fs, the root is on a 3FS mount and the library loads, else posix) [env MOONCAKE_DISTRIBUTED_IO; default auto]'
complete -c mcctl -n '__mcctl_at master start' -l usrbio-library -x -d '3FS\'s USRBIO client library, which mcctl loads but does not ship [env MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY; default hf3fs_api_shared]'
complete -c mcctl -n '__mcctl_at master start' -l port -x -d 'gRPC port of the master [env MCCTL_MASTER_PORT; default 50051]'
complete -c mcctl -n '__mcctl_at master start' -l metrics-port -x -d 'HTTP port for Prometheus metrics (/metrics) and health (/-/healthy) [env MCCTL_METRICS_PORT; default 9003]'
complete -c mcctl -n '__mcctl_at master start' -l bind -x -d 'address the master listens on [env MCCTL_MASTER_BIND; default 0.0.0.0]'
complete -c mcctl -n '__mcctl_at master start' -l allocation-deadline -x -d 'time a writer has between allocate and notify before its pages are reclaimed [env MCCTL_ALLOCATION_DEADLINE; default 60s]'
complete -c mcctl -n '__mcctl_at master start' -l allocation-grace -x -d 'how long past its deadline an expired or dropped allocation\'s pages are kept from reuse (its writer may still be writing) [env MCCTL_ALLOCATION_GRACE; default 10s]'
complete -c mcctl -n '__mcctl_at master start' -l read-lease -x -d 'how long a mapping lookup keeps the object\'s pages from reuse after a remove or overwrite [env MCCTL_READ_LEASE; default 5s]'
complete -c mcctl -n '__mcctl_at master start' -l durability -x -d 'how acknowledged changes survive a crash of the master [env MCCTL_DURABILITY; default wal]'
complete -c mcctl -n '__mcctl_at master start' -l state-dir -x -d 'where the master keeps its write-ahead log and snapshots [env MCCTL_STATE_DIR; default <root>/master]'
complete -c mcctl -n '__mcctl_at master start' -l snapshot-interval -x -d 'time between periodic snapshots [env MCCTL_SNAPSHOT_INTERVAL; default 600s]'
complete -c mcctl -n '__mcctl_at master start' -l snapshot-retention -x -d 'snapshots kept (older ones and the log they cover are deleted) [env MCCTL_SNAPSHOT_RETENTION; default 2]'
complete -c mcctl -n '__mcctl_at master start' -l bucket-check-interval -x -d 'time between the master\'s checks that every bucket file is still the one it laid out (one stat each); a bucket whose file is missing or replaced takes no allocations.'
complete -c mcctl -n '__mcctl_at master start' -l wal-segment-size -x -d 'size at which a write-ahead log segment is closed and a new one begun [env MCCTL_WAL_SEGMENT_SIZE; default 64MiB]'
complete -c mcctl -n '__mcctl_at master start' -l busy-poll -x -d 'how long a transport thread keeps polling its connections after its last work before it sleeps: less latency per call where waking a sleeping CPU is slow (virtual machines), for up to this much CPU after each burst of calls [env MCCTL_BUSY_POLL; default 0s]'
complete -c mcctl -n '__mcctl_at master start' -l max-connections -x -d 'most client connections the gRPC port holds open at once; one more is closed as soon as it is accepted.'
complete -c mcctl -n '__mcctl_at master start' -l connection-idle-timeout -x -d 'a connection with no call in progress for this long is closed (a client connects again at its next call); a connection that never sends a call is closed after it too [env MCCTL_CONNECTION_IDLE_TIMEOUT; default 300s]'
complete -c mcctl -n '__mcctl_at master start' -l session-backlog -x -d 'most bytes of answers a Session stream holds that its client has not taken; an answer past it cancels the stream with RESOURCE_EXHAUSTED (the stream stops being read long before, while its client takes nothing) [env MCCTL_SESSION_BACKLOG; default 16MiB]'
complete -c mcctl -n '__mcctl_at master start' -l session-backlog-total -x -d 'most bytes of answers all Session streams together hold that their clients have not taken; an answer past it, to a client not taking answers, cancels that stream with RESOURCE_EXHAUSTED [env MCCTL_SESSION_BACKLOG_TOTAL; default 256MiB]'
complete -c mcctl -n '__mcctl_at master start' -l eviction -x -d 'evict least recently used objects when the tier fills (false: a full tier refuses allocations with NO_AVAILABLE_HANDLE) [env MCCTL_EVICTION; default true]'
complete -c mcctl -n '__mcctl_at master start' -l eviction-high-watermark -x -d 'used share of all pages above which the evictor starts (pages in quarantine not counted) [env MCCTL_EVICTION_HIGH_WATERMARK; default 0.90]'
complete -c mcctl -n '__mcctl_at master start' -l eviction-low-watermark -x -d 'used share of all pages the evictor brings the tier down to [env MCCTL_EVICTION_LOW_WATERMARK; default 0.70]'
complete -c mcctl -n '__mcctl_at master start' -l tls-cert -x -d 'PEM certificate chain the master serves gRPC and metrics with; needs tls_key [env MCCTL_MASTER_TLS_CERT; default computed]'
complete -c mcctl -n '__mcctl_at master start' -l tls-key -x -d 'private key of tls_cert [env MCCTL_MASTER_TLS_KEY; default computed]'
complete -c mcctl -n '__mcctl_at master start' -l tls-client-ca -x -d 'CA certificates a gRPC client\'s certificate must chain to (mutual TLS); needs tls_cert [env MCCTL_MASTER_TLS_CLIENT_CA; default computed]'
complete -c mcctl -n '__mcctl_at master start' -l tokens-file -x -d 'tenant tokens (SHA-256 hashes) and their tenants and roles; read at start and on SIGHUP [env MCCTL_MASTER_TOKENS_FILE; default computed]'
complete -c mcctl -n '__mcctl_at master start' -l ha -x -d 'run for leadership on etcd: the leader serves, standbys follow the shared state and take over (docs/ha.md) [env MCCTL_HA; default computed]'
complete -c mcctl -n '__mcctl_at master start' -l ha-lease-ttl -x -d 'the leader\'s etcd lease: a standby takes over about this long after the leader dies; the leader stops answering changes a quarter of it before the lease can expire [env MCCTL_HA_LEASE_TTL; default 5s]'
complete -c mcctl -n '__mcctl_at master start' -l ha-start-empty -x -d 'with --ha: when the shared state cannot be read, move it aside into unreadable-<time>/ and start empty (every cached object is lost to the cache; docs/ha.md) [env MCCTL_HA_START_EMPTY; default false]'
complete -c mcctl -n '__mcctl_at master start' -l client-ttl -x -d 'a node the master has not heard from (Ping) within this long is dead: its MEMORY and LOCAL_DISK replicas are removed (Mooncake\'s client_ttl) [env MCCTL_CLIENT_TTL; default 10s]'
complete -c mcctl -n '__mcctl_at master start' -l promotion-reads -x -d 'reads of a DISTRIBUTED_DISK object within the admission window (about the last 262144 lookups) that queue it for promotion into a node\'s DRAM segment; 0: only mcctl promote queues objects [env MCCTL_PROMOTION_READS; default 3]'
complete -c mcctl -n '__mcctl_at master start' -l promotion-max-tasks -x -d 'most promotion tasks queued or in progress at once; admitted objects past it wait for the next admission [env MCCTL_PROMOTION_MAX_TASKS; default 1024]'
complete -c mcctl -n '__mcctl_at master start' -l kv-events-endpoint -x -d 'where the master publishes KV events (vLLM\'s schema, ZeroMQ PUB) for what the shared tier holds; the i-th tenant of kv_events_tenants publishes on the port plus i [env MCCTL_KV_EVENTS_ENDPOINT; default computed]'
complete -c mcctl -n '__mcctl_at master start' -l kv-events-replay-endpoint -x -d 'where a subscriber asks for the batches it missed (ZeroMQ ROUTER: it sends the 8-byte sequence to start from); the i-th tenant answers on the port plus i [env MCCTL_KV_EVENTS_REPLAY_ENDPOINT; default computed]'
complete -c mcctl -n '__mcctl_at master start' -l kv-events-topic -x -d 'the topic of each tenant\'s KV events (llm-d reads kv@<pod>@<model>: pool:<name> marks a tier shared by every pod) [env MCCTL_KV_EVENTS_TOPIC; default kv@pool:mcctl@{tenant}]'
complete -c mcctl -n '__mcctl_at master start' -l kv-events-tenants -x -d 'the tenants whose KV events are published, each on its own endpoints (no subscriber of one learns another\'s keys) [env MCCTL_KV_EVENTS_TENANTS; default default]'
complete -c mcctl -n '__mcctl_at master start' -l kv-events-buffer -x -d 'KV event batches kept per tenant for the replay endpoint (and rebuilt from the log after a restart or a fail-over) [env MCCTL_KV_EVENTS_BUFFER; default 1000]'
complete -c mcctl -n '__mcctl_at master start' -l kv-events-queue -x -d 'KV events waiting to be published at most; past it an event is dropped (counted, and its batch is not sent: subscribers see a gap in the sequence) rather than slowing the master [env MCCTL_KV_EVENTS_QUEUE; default 65536]'

# mcctl master status
complete -c mcctl -n '__mcctl_at master status' -f
complete -c mcctl -n '__mcctl_at master status' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at master status' -l ha -x -d 'The etcd cluster the masters campaign on: etcd://host:port[,host:port...][/prefix].'
complete -c mcctl -n '__mcctl_at master status' -l cluster -x -d 'Only the cluster with this id (that of the root\'s layout record).'
complete -c mcctl -n '__mcctl_at master status' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at master status' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at master status' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl offload
complete -c mcctl -n '__mcctl_at offload' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at offload' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at offload' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at offload' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at offload' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at offload' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at offload' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at offload' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at offload' -l batch -r -F -d 'Offload every regular file in DIR, each under its file name.'
complete -c mcctl -n '__mcctl_at offload' -l prefix -x -d 'With --batch: put P before each key.'
complete -c mcctl -n '__mcctl_at offload' -l batch-size -x -d 'Keys per master call (default: 64).'
complete -c mcctl -n '__mcctl_at offload' -l overwrite -d 'Replace keys that already exist (their old pages are freed).'
complete -c mcctl -n '__mcctl_at offload' -l pin -d 'Soft-pin the objects: when the tier is full they are evicted only when nothing unpinned is left.'
complete -c mcctl -n '__mcctl_at offload' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at offload' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at offload' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
complete -c mcctl -n '__mcctl_at offload' -l config -r -F -d 'YAML file of settings (default: $MCCTL_CONFIG, if set).'
complete -c mcctl -n '__mcctl_at offload' -l io -x -d 'how bucket-file bytes move: posix (positional reads and writes through the kernel), usrbio (3FS\'s USRBIO rings, past FUSE; refused at start when the library, a function of it or a 3FS mount under the root is missing), or auto (usrbio when fs_type is hf3fs, the root is on a 3FS mount and the library loads, else posix) [env MOONCAKE_DISTRIBUTED_IO; default auto]'
complete -c mcctl -n '__mcctl_at offload' -l usrbio-library -x -d '3FS\'s USRBIO client library, which mcctl loads but does not ship [env MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY; default hf3fs_api_shared]'

# mcctl get
complete -c mcctl -n '__mcctl_at get' -f
complete -c mcctl -n '__mcctl_at get' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at get' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at get' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at get' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at get' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at get' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at get' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at get' -l out -r -F -d 'File to write (directory with --batch, created if needed); default stdout.'
complete -c mcctl -n '__mcctl_at get' -l batch -r -F -d 'Read every key listed in this file, one per line.'
complete -c mcctl -n '__mcctl_at get' -s 0 -l null -d 'With --batch: keys in KEYS_FILE end with a NUL byte, not a newline.'
complete -c mcctl -n '__mcctl_at get' -l batch-size -x -d 'Keys per mapping call (default: 512); objects are read and written 64 at a time.'
complete -c mcctl -n '__mcctl_at get' -l read-threads -x -d 'With --batch: threads that read a batch of objects at once (default: the CPUs this process may use, at most 4); a batch of less than 256KiB is read on one thread.'
complete -c mcctl -n '__mcctl_at get' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at get' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at get' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
complete -c mcctl -n '__mcctl_at get' -l config -r -F -d 'YAML file of settings (default: $MCCTL_CONFIG, if set).'
complete -c mcctl -n '__mcctl_at get' -l io -x -d 'how bucket-file bytes move: posix (positional reads and writes through the kernel), usrbio (3FS\'s USRBIO rings, past FUSE; refused at start when the library, a function of it or a 3FS mount under the root is missing), or auto (usrbio when fs_type is hf3fs, the root is on a 3FS mount and the library loads, else posix) [env MOONCAKE_DISTRIBUTED_IO; default auto]'
complete -c mcctl -n '__mcctl_at get' -l usrbio-library -x -d '3FS\'s USRBIO client library, which mcctl loads but does not ship [env MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY; default hf3fs_api_shared]'

# mcctl rm
complete -c mcctl -n '__mcctl_at rm' -f
complete -c mcctl -n '__mcctl_at rm' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at rm' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at rm' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at rm' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at rm' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at rm' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at rm' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at rm' -l in-flight -d 'Drop the keys\' in-flight allocations (an admin call), not their mappings.'
complete -c mcctl -n '__mcctl_at rm' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at rm' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at rm' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl ls
complete -c mcctl -n '__mcctl_at ls' -f
complete -c mcctl -n '__mcctl_at ls' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at ls' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at ls' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at ls' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at ls' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at ls' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at ls' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at ls' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at ls' -l prefix -x -d 'Only keys that start with P.'
complete -c mcctl -n '__mcctl_at ls' -l limit -x -d 'At most N keys (default: all).'
complete -c mcctl -n '__mcctl_at ls' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at ls' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at ls' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl stat
complete -c mcctl -n '__mcctl_at stat' -f
complete -c mcctl -n '__mcctl_at stat' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at stat' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at stat' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at stat' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at stat' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at stat' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at stat' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at stat' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at stat' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at stat' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at stat' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl stats
complete -c mcctl -n '__mcctl_at stats' -f
complete -c mcctl -n '__mcctl_at stats' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at stats' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at stats' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at stats' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at stats' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at stats' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at stats' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at stats' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at stats' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at stats' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at stats' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl top
complete -c mcctl -n '__mcctl_at top' -f
complete -c mcctl -n '__mcctl_at top' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at top' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at top' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at top' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at top' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at top' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at top' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at top' -l interval -x -d 'Time between refreshes, 100ms to 1h (default: 1s).'
complete -c mcctl -n '__mcctl_at top' -l count -x -d 'Stop after N refreshes (default: 0, until q or Ctrl-C; when stdout is not a terminal, until killed).'
complete -c mcctl -n '__mcctl_at top' -l tenants -x -d 'Most tenants listed, biggest first; 0 lists none (default: 10).'
complete -c mcctl -n '__mcctl_at top' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at top' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at top' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot
complete -c mcctl -n '__mcctl_at snapshot' -f
complete -c mcctl -n '__mcctl_at snapshot' -a 'create' -d 'Ask the master to write a snapshot of its state now (it keeps serving meanwhile).'
complete -c mcctl -n '__mcctl_at snapshot' -a 'list' -d 'List the snapshots (newest first: file, covered WAL sequence, creation time, size, mappings) and the write-ahead log segments (file, first sequence, size, records, last sequence) of a master state directory.'
complete -c mcctl -n '__mcctl_at snapshot' -a 'inspect' -d 'Show a snapshot\'s header, meta record (cluster, root, layout, covered WAL sequence, creation time, settings), section table with each checksum checked, and counters: mappings, in-flight allocations, quarantined ranges and pages, tenants, and pages used per bucket (mappings, in flight and quarantine; the text lists only buckets in use).'
complete -c mcctl -n '__mcctl_at snapshot' -a 'verify' -d 'Verify a snapshot, or a master state directory, without changing it.'
complete -c mcctl -n '__mcctl_at snapshot' -a 'diff' -d 'Compare two snapshots: keys added, removed, moved (same tenant and key, another bucket, offset or size) and rewritten in place (same place, another CRC32C), with counts, and pages used per bucket before and after (the text shows only buckets that changed; JSON has both full arrays).'
complete -c mcctl -n '__mcctl_at snapshot' -a 'export' -d 'Export a snapshot\'s whole state to stdout as JSON Lines: one object per line, each with a "type": first "meta" (layout, covered WAL sequence, creation time, counts, settings), then one "mapping" (tenant, key, bucket, offset, size, pages, crc32c), "in_flight" (the same, with deadline and overwrite) or "quarantine" (bucket, first_page, pages, offset, size, release) per record, in file order.'
complete -c mcctl -n '__mcctl_at snapshot' -a 'recover' -d 'Find what keeps a master from recovering its state directory: corrupt snapshots, a log cut short or damaged, log segments that can no longer be replayed; print exactly what would be lost to get past it.'
complete -c mcctl -n '__mcctl_at snapshot' -a 'wal' -d 'Read the master\'s write-ahead log.'
complete -c mcctl -n '__mcctl_at snapshot' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot create
complete -c mcctl -n '__mcctl_at snapshot create' -f
complete -c mcctl -n '__mcctl_at snapshot create' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at snapshot create' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at snapshot create' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at snapshot create' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at snapshot create' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at snapshot create' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at snapshot create' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at snapshot create' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot create' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot create' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot list
complete -c mcctl -n '__mcctl_at snapshot list' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at snapshot list' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot list' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot list' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot inspect
complete -c mcctl -n '__mcctl_at snapshot inspect' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at snapshot inspect' -l keys -d 'List the mappings: tenant, key, bucket, offset, size, pages, CRC32C.'
complete -c mcctl -n '__mcctl_at snapshot inspect' -l tenant -x -d 'Only the keys of tenant T (implies --keys).'
complete -c mcctl -n '__mcctl_at snapshot inspect' -l prefix -x -d 'Only keys that start with P (implies --keys).'
complete -c mcctl -n '__mcctl_at snapshot inspect' -l limit -x -d 'At most N keys, the first in order (default: all; implies --keys).'
complete -c mcctl -n '__mcctl_at snapshot inspect' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot inspect' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot inspect' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot verify
complete -c mcctl -n '__mcctl_at snapshot verify' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at snapshot verify' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot verify' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot verify' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot diff
complete -c mcctl -n '__mcctl_at snapshot diff' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at snapshot diff' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot diff' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot diff' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot export
complete -c mcctl -n '__mcctl_at snapshot export' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at snapshot export' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot export' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot export' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot recover
complete -c mcctl -n '__mcctl_at snapshot recover' -f
complete -c mcctl -n '__mcctl_at snapshot recover' -l state-dir -r -F -d 'The master\'s state directory (default: ./mooncake-data/master).'
complete -c mcctl -n '__mcctl_at snapshot recover' -l discard-damaged -d 'Do it: set the damaged files aside and cut the log (default: only report).'
complete -c mcctl -n '__mcctl_at snapshot recover' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot recover' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot recover' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot wal
complete -c mcctl -n '__mcctl_at snapshot wal' -f
complete -c mcctl -n '__mcctl_at snapshot wal' -a 'dump' -d 'Print the decoded records of a state directory\'s write-ahead log in order: sequence, time (ISO-8601, UTC), change (allocated, committed, pending_dropped, removed, released, reserved, reservation_closed, ...) and its fields; places read bucket@offset+size.'
complete -c mcctl -n '__mcctl_at snapshot wal' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot wal' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot wal' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl snapshot wal dump
complete -c mcctl -n '__mcctl_at snapshot wal dump' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at snapshot wal dump' -l from -x -d 'Start at this record sequence (default: the oldest record the log still holds).'
complete -c mcctl -n '__mcctl_at snapshot wal dump' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at snapshot wal dump' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at snapshot wal dump' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl fsck
complete -c mcctl -n '__mcctl_at fsck' -f
complete -c mcctl -n '__mcctl_at fsck' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at fsck' -l state-dir -r -F -d 'Check the state a master would recover from DIR (default <root>/master).'
complete -c mcctl -n '__mcctl_at fsck' -l snapshot -r -F -d 'Check the state one snapshot file holds.'
complete -c mcctl -n '__mcctl_at fsck' -l root -r -F -d 'The root holding the bucket files (default: the state directory\'s parent, or the root the snapshot records).'
complete -c mcctl -n '__mcctl_at fsck' -l deep -d 'Also read every object back and check its CRC32C; corrupt objects are listed by tenant, key, file and offset.'
complete -c mcctl -n '__mcctl_at fsck' -l rate-limit -x -d 'With --deep, keep the average read rate under this many MB (1 MB = 1,000,000 bytes) a second (default: no limit).'
complete -c mcctl -n '__mcctl_at fsck' -l master -x -d 'Check a live master (default address: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at fsck' -l repair -d 'With --master: mark false-free pages allocated, then free leaked ranges.'
complete -c mcctl -n '__mcctl_at fsck' -l min-age -x -d 'With --master: unclaimed pages in a region allocated from less than this ago are reported as young, not leaked, and never freed (default: the master\'s allocation deadline).'
complete -c mcctl -n '__mcctl_at fsck' -l timeout -x -d 'With --master: deadline of each call (default: 2m).'
complete -c mcctl -n '__mcctl_at fsck' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at fsck' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at fsck' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at fsck' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at fsck' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at fsck' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at fsck' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
complete -c mcctl -n '__mcctl_at fsck' -l config -r -F -d 'YAML file of settings (default: $MCCTL_CONFIG, if set).'
complete -c mcctl -n '__mcctl_at fsck' -l io -x -d 'how bucket-file bytes move: posix (positional reads and writes through the kernel), usrbio (3FS\'s USRBIO rings, past FUSE; refused at start when the library, a function of it or a 3FS mount under the root is missing), or auto (usrbio when fs_type is hf3fs, the root is on a 3FS mount and the library loads, else posix) [env MOONCAKE_DISTRIBUTED_IO; default auto]'
complete -c mcctl -n '__mcctl_at fsck' -l usrbio-library -x -d '3FS\'s USRBIO client library, which mcctl loads but does not ship [env MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY; default hf3fs_api_shared]'
complete -c mcctl -n '__mcctl_at fsck' -l fs-type -x -d 'filesystem under the root: hf3fs (3FS) or posix (any local or shared POSIX directory) [env MOONCAKE_DISTRIBUTED_FS_TYPE; default posix]'

# mcctl bitmap
complete -c mcctl -n '__mcctl_at bitmap' -f
complete -c mcctl -n '__mcctl_at bitmap' -a 'inspect' -d 'Per-bucket page usage, free-run histogram, fragmentation, region map.'
complete -c mcctl -n '__mcctl_at bitmap' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bitmap' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bitmap' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bitmap inspect
complete -c mcctl -n '__mcctl_at bitmap inspect' -f
complete -c mcctl -n '__mcctl_at bitmap inspect' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l state-dir -r -F -d 'Inspect the state a master would recover from DIR (default <root>/master).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l snapshot -r -F -d 'Inspect the state a snapshot file holds.'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l bucket -x -d 'Show bucket N in detail: a decimal number, hex with 0x, or its file\'s name (61, 0x3d and bucket_3d.data are one bucket) (default: a summary across buckets).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l regions -x -d 'Regions in a bucket\'s region map, each of ceil(pages / N) pages, so the map may have fewer (default: 64).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l can-alloc -x -d 'Would a run of N pages fit, and at which page does the first fit start.'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l extents -d 'List the bucket\'s free extents as FIRST_PAGE~PAGES (needs --bucket).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -l limit -x -d 'At most N extents with --extents; the rest are counted (default: 1000; 0: all).'
complete -c mcctl -n '__mcctl_at bitmap inspect' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bitmap inspect' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bitmap inspect' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl mount
complete -c mcctl -n '__mcctl_at mount' -f
complete -c mcctl -n '__mcctl_at mount' -a 'validate' -d 'Check that this node\'s mount of the root is fit to join the tier: the root, its filesystem (3FS or not), stat latency, capacity, the layout record, the bucket files, the open-file limit, and a write + fsync + read-back probe in a scratch file (never a bucket file).'
complete -c mcctl -n '__mcctl_at mount' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at mount' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at mount' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl mount validate
complete -c mcctl -n '__mcctl_at mount validate' -f
complete -c mcctl -n '__mcctl_at mount validate' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at mount validate' -l master -x -d 'Also compare with this master\'s layout: cluster id, root path, sizes (default: no master).'
complete -c mcctl -n '__mcctl_at mount validate' -l timeout -x -d 'How long any one check (and the master call) may take before it counts as hung (default: 5s).'
complete -c mcctl -n '__mcctl_at mount validate' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at mount validate' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at mount validate' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
complete -c mcctl -n '__mcctl_at mount validate' -l config -r -F -d 'YAML file of settings (default: $MCCTL_CONFIG, if set).'
complete -c mcctl -n '__mcctl_at mount validate' -l page-mode -x -d 'page mode of offloads through a node: true writes pages of the shared bucket files (DISTRIBUTED_DISK, no owner), false one file per key under the node\'s --local-disk (LOCAL_DISK, owned by the node); a node\'s setting, the master serves both [env MOONCAKE_DISTRIBUTED_PAGE_MODE; default true]'
complete -c mcctl -n '__mcctl_at mount validate' -l root -x -d 'directory that holds the bucket files, mounted at the same path on every node [env MOONCAKE_DISTRIBUTED_ROOT_DIR; default ./mooncake-data]'
complete -c mcctl -n '__mcctl_at mount validate' -l fs-type -x -d 'filesystem under the root: hf3fs (3FS) or posix (any local or shared POSIX directory) [env MOONCAKE_DISTRIBUTED_FS_TYPE; default posix]'
complete -c mcctl -n '__mcctl_at mount validate' -l bucket-count -x -d 'number of bucket files [env MOONCAKE_DISTRIBUTED_BUCKET_COUNT; default 256]'
complete -c mcctl -n '__mcctl_at mount validate' -l page-size -x -d 'bytes per page, the unit of allocation [env MOONCAKE_DISTRIBUTED_PAGE_SIZE; default 64KiB]'
complete -c mcctl -n '__mcctl_at mount validate' -l bucket-size -x -d 'bytes per bucket file [env MOONCAKE_DISTRIBUTED_BUCKET_SIZE; default 4GiB]'
complete -c mcctl -n '__mcctl_at mount validate' -l health-check -x -d 'run the checks of mcctl mount validate before laying out the root; any FAIL stops the master [env MOONCAKE_DISTRIBUTED_HEALTH_CHECK; default false]'
complete -c mcctl -n '__mcctl_at mount validate' -l preallocate -x -d 'reserve real space for every bucket file when the master starts (fallocate), so that a full filesystem shows at start, not as failed writes later [env MOONCAKE_DISTRIBUTED_PREALLOCATE_BUCKETS; default false]'
complete -c mcctl -n '__mcctl_at mount validate' -l io -x -d 'how bucket-file bytes move: posix (positional reads and writes through the kernel), usrbio (3FS\'s USRBIO rings, past FUSE; refused at start when the library, a function of it or a 3FS mount under the root is missing), or auto (usrbio when fs_type is hf3fs, the root is on a 3FS mount and the library loads, else posix) [env MOONCAKE_DISTRIBUTED_IO; default auto]'
complete -c mcctl -n '__mcctl_at mount validate' -l usrbio-library -x -d '3FS\'s USRBIO client library, which mcctl loads but does not ship [env MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY; default hf3fs_api_shared]'

# mcctl quota
complete -c mcctl -n '__mcctl_at quota' -f
complete -c mcctl -n '__mcctl_at quota' -a 'set' -d 'Set a tenant\'s byte quota (none removes it).'
complete -c mcctl -n '__mcctl_at quota' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at quota' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at quota' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl quota set
complete -c mcctl -n '__mcctl_at quota set' -f
complete -c mcctl -n '__mcctl_at quota set' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at quota set' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at quota set' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at quota set' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at quota set' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at quota set' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at quota set' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at quota set' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at quota set' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at quota set' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl events
complete -c mcctl -n '__mcctl_at events' -f
complete -c mcctl -n '__mcctl_at events' -a 'tail' -d 'Print the KV events a master publishes (kv_events_endpoint), one line per event: the batch\'s sequence, the event\'s type, its block hashes and fields.'
complete -c mcctl -n '__mcctl_at events' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at events' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at events' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl events tail
complete -c mcctl -n '__mcctl_at events tail' -f
complete -c mcctl -n '__mcctl_at events tail' -l endpoint -x -d 'The publisher to subscribe to, e.g.'
complete -c mcctl -n '__mcctl_at events tail' -l topic -x -d 'Only batches whose topic starts with TOPIC (default: every topic).'
complete -c mcctl -n '__mcctl_at events tail' -l replay-endpoint -x -d 'The publisher\'s replay endpoint: with --from, the kept batches from that sequence are printed first.'
complete -c mcctl -n '__mcctl_at events tail' -l from -x -d 'Sequence to replay from (needs --replay-endpoint).'
complete -c mcctl -n '__mcctl_at events tail' -l count -x -d 'Stop after N events (default: run until interrupted).'
complete -c mcctl -n '__mcctl_at events tail' -l idle-timeout -x -d 'Stop when nothing arrives for this many seconds (default: wait for ever).'
complete -c mcctl -n '__mcctl_at events tail' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at events tail' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at events tail' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at events tail' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl layout
complete -c mcctl -n '__mcctl_at layout' -f
complete -c mcctl -n '__mcctl_at layout' -a 'grow' -d 'Grow every bucket file to a larger bucket size while the master serves: the files are extended (never shrunk or truncated), the master\'s allocators grow, the new size is logged and written to mooncake.layout.json, and nodes learn it from the master.'
complete -c mcctl -n '__mcctl_at layout' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at layout' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at layout' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl layout grow
complete -c mcctl -n '__mcctl_at layout grow' -f
complete -c mcctl -n '__mcctl_at layout grow' -l bucket-size -x -d 'The new size of every bucket (e.g.'
complete -c mcctl -n '__mcctl_at layout grow' -l preallocate -d 'Also reserve real space for the whole new size (fallocate), so that writes into it cannot fail for want of space.'
complete -c mcctl -n '__mcctl_at layout grow' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at layout grow' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at layout grow' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at layout grow' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at layout grow' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at layout grow' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at layout grow' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at layout grow' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at layout grow' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at layout grow' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl node
complete -c mcctl -n '__mcctl_at node' -f
complete -c mcctl -n '__mcctl_at node' -a 'start' -d 'Run a node in the foreground: it registers with the master under a new client id (a UUID), pings it within every TTL and serves reads of what it holds on its transfer endpoint (--listen).'
complete -c mcctl -n '__mcctl_at node' -a 'status' -d 'List the nodes the master knows: client id, endpoint, alive or dead, the time since their last ping, the LOCAL_DISK objects each owns, and its DRAM segment: size, bytes used by MEMORY replicas (complete or staged), MEMORY objects, and the promotion tasks it has taken and not finished.'
complete -c mcctl -n '__mcctl_at node' -a 'offload' -d 'Write FILE under KEY through a node: in page mode, the per-key model, or the node\'s DRAM segment.'
complete -c mcctl -n '__mcctl_at node' -a 'get' -d 'Read KEY through a node, which takes the best replica it can reach and falls back to the next.'
complete -c mcctl -n '__mcctl_at node' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at node' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at node' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl node start
complete -c mcctl -n '__mcctl_at node start' -f
complete -c mcctl -n '__mcctl_at node start' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at node start' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at node start' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at node start' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at node start' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at node start' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at node start' -l listen -x -d 'Address the node\'s endpoint listens on; port 0 picks a free one (default: 0.0.0.0:50061).'
complete -c mcctl -n '__mcctl_at node start' -l advertise -x -d 'Host other nodes reach this one at (default: the --listen host, or this machine\'s name when it is 0.0.0.0).'
complete -c mcctl -n '__mcctl_at node start' -l local-disk -r -F -d 'Directory for per-key files (page_mode false): 256 hashed directories, one file per object.'
complete -c mcctl -n '__mcctl_at node start' -l memory -x -d 'Size of this node\'s DRAM segment for MEMORY replicas, off-heap: 1MiB up to what the JVM may allocate off-heap (-XX:MaxDirectMemorySize, set through MCCTL_JAVA_OPTS).'
complete -c mcctl -n '__mcctl_at node start' -l promotion-interval -x -d 'How often a node with --memory and the shared root asks the master for promotion tasks, 10ms to 1h (default: 200ms).'
complete -c mcctl -n '__mcctl_at node start' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at node start' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at node start' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
complete -c mcctl -n '__mcctl_at node start' -l config -r -F -d 'YAML file of settings (default: $MCCTL_CONFIG, if set).'
complete -c mcctl -n '__mcctl_at node start' -l page-mode -x -d 'page mode of offloads through a node: true writes pages of the shared bucket files (DISTRIBUTED_DISK, no owner), false one file per key under the node\'s --local-disk (LOCAL_DISK, owned by the node); a node\'s setting, the master serves both [env MOONCAKE_DISTRIBUTED_PAGE_MODE; default true]'
complete -c mcctl -n '__mcctl_at node start' -l io -x -d 'how bucket-file bytes move: posix (positional reads and writes through the kernel), usrbio (3FS\'s USRBIO rings, past FUSE; refused at start when the library, a function of it or a 3FS mount under the root is missing), or auto (usrbio when fs_type is hf3fs, the root is on a 3FS mount and the library loads, else posix) [env MOONCAKE_DISTRIBUTED_IO; default auto]'
complete -c mcctl -n '__mcctl_at node start' -l usrbio-library -x -d '3FS\'s USRBIO client library, which mcctl loads but does not ship [env MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY; default hf3fs_api_shared]'

# mcctl node status
complete -c mcctl -n '__mcctl_at node status' -f
complete -c mcctl -n '__mcctl_at node status' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at node status' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at node status' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at node status' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at node status' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at node status' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at node status' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at node status' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at node status' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at node status' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl node offload
complete -c mcctl -n '__mcctl_at node offload' -l node -x -d 'The node\'s endpoint, as mcctl node start printed it (mcctl node status lists them).'
complete -c mcctl -n '__mcctl_at node offload' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at node offload' -l timeout -x -d 'Deadline of the call to the node (default: 30s).'
complete -c mcctl -n '__mcctl_at node offload' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at node offload' -l mode -x -d 'page: pages of the shared bucket files (DISTRIBUTED_DISK); per-key: a file on the node (LOCAL_DISK); memory: the node\'s DRAM segment (MEMORY).'
complete -c mcctl -n '__mcctl_at node offload' -l page-mode -x -d 'true: as --mode page; false: as --mode per-key.'
complete -c mcctl -n '__mcctl_at node offload' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at node offload' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at node offload' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl node get
complete -c mcctl -n '__mcctl_at node get' -f
complete -c mcctl -n '__mcctl_at node get' -l node -x -d 'The node\'s endpoint, as mcctl node start printed it (mcctl node status lists them).'
complete -c mcctl -n '__mcctl_at node get' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at node get' -l timeout -x -d 'Deadline of the call to the node (default: 30s).'
complete -c mcctl -n '__mcctl_at node get' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at node get' -l out -r -F -d 'File to write; default stdout.'
complete -c mcctl -n '__mcctl_at node get' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at node get' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at node get' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl promote
complete -c mcctl -n '__mcctl_at promote' -f
complete -c mcctl -n '__mcctl_at promote' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at promote' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at promote' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at promote' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at promote' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at promote' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at promote' -l tenant -x -d 'Tenant whose keys to use: letters, digits, \'.\', \'_\' and \'-\', at most 64 (default: default).'
complete -c mcctl -n '__mcctl_at promote' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at promote' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at promote' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl promotions
complete -c mcctl -n '__mcctl_at promotions' -f
complete -c mcctl -n '__mcctl_at promotions' -l master -x -d 'Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha (default: $MCCTL_MASTER, else localhost:50051).'
complete -c mcctl -n '__mcctl_at promotions' -l timeout -x -d 'Deadline of each call to the master (default: 10s).'
complete -c mcctl -n '__mcctl_at promotions' -l tls-ca -r -F -d 'Connect over TLS, trusting only the CA certificates in this PEM file (default: $MCCTL_TLS_CA, else plaintext).'
complete -c mcctl -n '__mcctl_at promotions' -l tls-cert -r -F -d 'Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $MCCTL_TLS_CERT).'
complete -c mcctl -n '__mcctl_at promotions' -l tls-key -r -F -d 'Private key (PEM, PKCS#8) of --tls-cert (default: $MCCTL_TLS_KEY).'
complete -c mcctl -n '__mcctl_at promotions' -l token-file -r -F -d 'File whose first line is the bearer token to present (default: the token in $MCCTL_TOKEN, else none).'
complete -c mcctl -n '__mcctl_at promotions' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at promotions' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at promotions' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at promotions' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl demo
complete -c mcctl -n '__mcctl_at demo' -f
complete -c mcctl -n '__mcctl_at demo' -a 'owner-death' -d 'Offload through node A in both modes, kill -9 A, read from node B: the LOCAL_DISK objects are gone from the master although their files are intact on A\'s disk; the DISTRIBUTED_DISK objects read back byte-exact.'
complete -c mcctl -n '__mcctl_at demo' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at demo' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at demo' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl demo owner-death
complete -c mcctl -n '__mcctl_at demo owner-death' -f
complete -c mcctl -n '__mcctl_at demo owner-death' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at demo owner-death' -l objects -x -d 'Objects per mode (default: 8).'
complete -c mcctl -n '__mcctl_at demo owner-death' -l size -x -d 'Bytes per object (default: 64KiB).'
complete -c mcctl -n '__mcctl_at demo owner-death' -l client-ttl -x -d 'The master\'s client_ttl: how long A has been silent when it is declared dead (default: 3s).'
complete -c mcctl -n '__mcctl_at demo owner-death' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at demo owner-death' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at demo owner-death' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench
complete -c mcctl -n '__mcctl_at bench' -f
complete -c mcctl -n '__mcctl_at bench' -a 'allocator' -d 'Steady-state free+allocate pairs (runs of 1..16 pages) on fragmented buckets, for mcctl\'s allocator and for the design RFC\'s bit-by-bit scan, from the same state in the same run: 65,536 pages at 50%%, 90%%, 97%% fill and 1,048,576 pages at 90%%.'
complete -c mcctl -n '__mcctl_at bench' -a 'master' -d 'Offload cycles (BatchAllocate + Notify, no data) and mapping lookups (BatchGetDistributedPageMapping) from client threads at batch sizes 1 and 64 (at 64 also packed: one array of placements per batch), each phase once as unary calls and once over the Session stream, for a fixed time after a warm-up pass of every phase, against a master started as its own process on a temporary root (write-ahead log on) or --master.'
complete -c mcctl -n '__mcctl_at bench' -a 'io' -d 'Batch offload (allocate, write, fdatasync, notify) and batch get (mapping calls, read, CRC32C check) of objects of each --object-sizes, with an embedded master on a temporary root (or --root), through the bucket-file IO --io names: posix, usrbio (3FS\'s USRBIO; --root must be on a 3FS mount) or both, measured in turns in the same passes.'
complete -c mcctl -n '__mcctl_at bench' -a 'restart' -d 'Runs each master as its own process, as in production, on temporary roots (256 x 4GiB sparse buckets, 64KiB pages).'
complete -c mcctl -n '__mcctl_at bench' -a 'fsck' -d 'Builds a master state of --mappings one-page mappings on a temporary root (256 x 4GiB sparse buckets of 64KiB pages: 65,536 pages each) and measures, as the median of --runs runs: a full live fsck (the master\'s page check plus this node\'s bucket file checks), the longest the master\'s check held any one lock, lookup p99 while live checks run back to back against idle p99, and a full offline fsck of the state directory (recovery included).'
complete -c mcctl -n '__mcctl_at bench' -a 'cache' -d 'Replay a trace of keys drawn from a Zipf distribution over a key space three times the tier\'s capacity, a mapping lookup per request and an offload (BatchAllocate + Notify, no data) on each miss, against an evicting master; replay the same trace through an exact LRU cache of the same capacity in objects; report both hit ratios.'
complete -c mcctl -n '__mcctl_at bench' -a 'crossnode' -d 'Node B reads objects node A wrote: through A (LOCAL_DISK, the RPC hop) and by a direct pread (DISTRIBUTED_DISK), 64KiB and 1MiB by default, in one run.'
complete -c mcctl -n '__mcctl_at bench' -a 'layout' -d 'Per-key files (256 hashed directories, one file per object) against pages of bucket files, for the same objects in one run.'
complete -c mcctl -n '__mcctl_at bench' -a 'failover' -d 'Starts etcd (one member on free loopback ports over a temporary directory) and two masters with --ha as processes of their own over one temporary root (256 x 4GiB sparse buckets, 64KiB pages), fills the state with --mappings mappings (offload cycles without data, 8 callers, batch 64) and takes a snapshot.'
complete -c mcctl -n '__mcctl_at bench' -a 'promotion' -d 'Reads of promoted objects from a node\'s DRAM against the same bytes by pread, 64KiB and 1MiB by default, in one run.'
complete -c mcctl -n '__mcctl_at bench' -a 'pages' -d 'The master\'s page service alone, in this JVM (no gRPC, no write-ahead log): offload cycles (allocate + notify) filling its table to --mappings, then for a fixed time, then lookups of random committed keys and of a few keys that stay in the caches, one thread in batches.'
complete -c mcctl -n '__mcctl_at bench' -a 'chaos' -d 'Starts etcd (1 or 3 members), three masters with --ha over one root on a small tmpfs, two nodes (one with a DRAM segment) and Python workers, each in a network namespace of its own on a bridge this run creates (needs root; everything it makes is deleted at the end).'
complete -c mcctl -n '__mcctl_at bench' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench allocator
complete -c mcctl -n '__mcctl_at bench allocator' -f
complete -c mcctl -n '__mcctl_at bench allocator' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench allocator' -l ops -x -d 'Pairs measured per case for mcctl\'s allocator (default: 1000000).'
complete -c mcctl -n '__mcctl_at bench allocator' -l rfc-budget-ms -x -d 'Time the RFC allocator may take per case; it stops early when spent (default: 3000).'
complete -c mcctl -n '__mcctl_at bench allocator' -l seed -x -d 'Random seed (default: 42).'
complete -c mcctl -n '__mcctl_at bench allocator' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench allocator' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench allocator' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench master
complete -c mcctl -n '__mcctl_at bench master' -f
complete -c mcctl -n '__mcctl_at bench master' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench master' -l master -x -d 'Benchmark this running master instead of one started here.'
complete -c mcctl -n '__mcctl_at bench master' -l master-pid -x -d 'With --master: its process id on this machine, for its CPU per key.'
complete -c mcctl -n '__mcctl_at bench master' -l master-jvm-option -x -d 'A JVM option for the master started here, after those mcctl master starts with (-XX:+UseTransparentHugePages where the kernel offers huge pages) and those of --master-heap, e.g.'
complete -c mcctl -n '__mcctl_at bench master' -l master-busy-poll -x -d 'The masters started here poll their connections for this long after their last work before they sleep (mcctl master start --busy-poll; allowed: from 0s, off, to 1ms, e.g.'
complete -c mcctl -n '__mcctl_at bench master' -l master-heap -x -d 'Heap of the master started here, fixed at this size and touched before it serves (-Xms, -Xmx, -XX:+AlwaysPreTouch), as a master is best run; \'grow\' leaves the JVM\'s heap that grows under load, the kernel zeroing each new page while the phases run (default: 4GiB, or a quarter of the machine\'s memory shared among the masters started at once where that is less).'
complete -c mcctl -n '__mcctl_at bench master' -l threads -x -d 'Client threads (default: 8).'
complete -c mcctl -n '__mcctl_at bench master' -l seconds -x -d 'Measured seconds per phase (default: 5).'
complete -c mcctl -n '__mcctl_at bench master' -l warmup-seconds -x -d 'Seconds per phase of the unmeasured warm-up pass over every phase, for the JIT (default: 4).'
complete -c mcctl -n '__mcctl_at bench master' -l buckets -x -d 'Buckets of the master started here (default: 256).'
complete -c mcctl -n '__mcctl_at bench master' -l bucket-size -x -d 'Bucket size of the master started here (default: 4GiB).'
complete -c mcctl -n '__mcctl_at bench master' -l memory-mappings -x -d 'Mappings for the heap-per-mapping figure; 0 skips it (default: 1000000).'
complete -c mcctl -n '__mcctl_at bench master' -l compare-durability -d 'Also run every phase against a second master started here with --durability snapshot (the design RFC\'s: nothing logged, periodic snapshots only), after the one with the write-ahead log, with its own warm-up pass, and report snapshot over WAL for each phase.'
complete -c mcctl -n '__mcctl_at bench master' -l compare-kv-events -d 'Also run every phase against a second master started here with KV events on (kv_events_endpoint on a free loopback port, one subscriber reading every batch), in turns with the first, and report its figures over the first\'s; every offload of both attaches one KV block per object.'
complete -c mcctl -n '__mcctl_at bench master' -l security -d 'Also run the offload and lookup phases against embedded masters with plaintext, with tokens, and with TLS and tokens, one after the other in this run (needs openssl on PATH for the certificates).'
complete -c mcctl -n '__mcctl_at bench master' -l phases -x -d 'The phases to run, comma-separated, in this order whatever the list\'s: offload-1, offload-64, offload-64-packed, lookup-1, lookup-64, lookup-64-packed, lookup-1-alone (one caller) (default: all); offload-N, offload-N-packed, lookup-N and lookup-N-packed run batches of N keys a call (1 to 10000), offloads first, smaller batches first.'
complete -c mcctl -n '__mcctl_at bench master' -l transport -x -d 'Run each phase as unary calls, over the Session stream, or both, unary first (default: both).'
complete -c mcctl -n '__mcctl_at bench master' -l rounds -x -d 'Measured passes over the phases after the warm-up; each figure reported is the median over them, and the JSON report lists each round\'s throughput and CPU per key (default: 1).'
complete -c mcctl -n '__mcctl_at bench master' -l baseline-jar -r -F -d 'Also start a master from this mcctl jar (another build\'s mcctl-all.jar), beside this build\'s, and report this build over it for each phase; the two take their rounds in turns.'
complete -c mcctl -n '__mcctl_at bench master' -l baseline-jvm-option -x -d 'A JVM option for the baseline master, in place of --master-jvm-option\'s (repeatable); given without --baseline-jar, the baseline is this build with these options.'
complete -c mcctl -n '__mcctl_at bench master' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench master' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench master' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench io
complete -c mcctl -n '__mcctl_at bench io' -f
complete -c mcctl -n '__mcctl_at bench io' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench io' -l io -r -F -d 'Bucket-file IO to measure: posix, usrbio or both (default: posix).'
complete -c mcctl -n '__mcctl_at bench io' -l object-sizes -x -d 'Object sizes, one case each (default: 64KiB,2MiB).'
complete -c mcctl -n '__mcctl_at bench io' -l total -x -d 'Bytes of objects per object size (default: 1GiB).'
complete -c mcctl -n '__mcctl_at bench io' -l rounds -x -d 'Timed passes over the data (default: 5).'
complete -c mcctl -n '__mcctl_at bench io' -l keys-per-lookup -x -d 'Most keys per mapping call; reads go 64 objects at a time whatever this is (default: 512).'
complete -c mcctl -n '__mcctl_at bench io' -l read-threads -x -d 'Threads the tier reads a batch on (default: the CPUs this process may use, at most 4).'
complete -c mcctl -n '__mcctl_at bench io' -l root -r -F -d 'Directory for the bucket files (default: a temporary directory, removed after; for usrbio give a directory on the 3FS mount).'
complete -c mcctl -n '__mcctl_at bench io' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench io' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench io' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
complete -c mcctl -n '__mcctl_at bench io' -l config -r -F -d 'YAML file of settings (default: $MCCTL_CONFIG, if set).'
complete -c mcctl -n '__mcctl_at bench io' -l usrbio-library -x -d '3FS\'s USRBIO client library, which mcctl loads but does not ship [env MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY; default hf3fs_api_shared]'

# mcctl bench restart
complete -c mcctl -n '__mcctl_at bench restart' -f
complete -c mcctl -n '__mcctl_at bench restart' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench restart' -l mappings -x -d 'Mappings in the state (default: 1000000).'
complete -c mcctl -n '__mcctl_at bench restart' -l wal-records -x -d 'Log records after the snapshot (default: 100000).'
complete -c mcctl -n '__mcctl_at bench restart' -l keys -x -d 'Keys per durability mode in the throughput comparison (default: 100000).'
complete -c mcctl -n '__mcctl_at bench restart' -l snapshots -x -d 'Snapshots taken while lookups are timed; the median p99 ratio is reported (default: 3).'
complete -c mcctl -n '__mcctl_at bench restart' -l rounds -x -d 'Throughput runs per durability mode, alternating (default: 3).'
complete -c mcctl -n '__mcctl_at bench restart' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench restart' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench restart' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench fsck
complete -c mcctl -n '__mcctl_at bench fsck' -f
complete -c mcctl -n '__mcctl_at bench fsck' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench fsck' -l mappings -x -d 'Mappings in the state (default: 1000000).'
complete -c mcctl -n '__mcctl_at bench fsck' -l runs -x -d 'Runs of each fsck; the median is reported (default: 3).'
complete -c mcctl -n '__mcctl_at bench fsck' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench fsck' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench fsck' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench cache
complete -c mcctl -n '__mcctl_at bench cache' -f
complete -c mcctl -n '__mcctl_at bench cache' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench cache' -l master -x -d 'Benchmark this running, evicting master (best empty; the benchmark\'s keys are removed after) instead of embedded ones.'
complete -c mcctl -n '__mcctl_at bench cache' -l zipf -x -d 'Zipf exponents, one run each, above 0 and at most 3 (default: 0.8,1.1).'
complete -c mcctl -n '__mcctl_at bench cache' -l requests -x -d 'Requests of each trace (default: 50000).'
complete -c mcctl -n '__mcctl_at bench cache' -l object-size -x -d 'Bytes of each object (default: 16KiB).'
complete -c mcctl -n '__mcctl_at bench cache' -l object-size-max -x -d 'Largest object: each key\'s size is drawn once, uniformly from --object-size to this (default: --object-size, all alike).'
complete -c mcctl -n '__mcctl_at bench cache' -l fragmentation-every -x -d 'Sample the tier\'s fragmentation score (from every bucket\'s bitmap) every N requests of each trace and at its end (default: 0, a tenth of --requests).'
complete -c mcctl -n '__mcctl_at bench cache' -l buckets -x -d 'Buckets of the embedded master (default: 8).'
complete -c mcctl -n '__mcctl_at bench cache' -l bucket-size -x -d 'Bucket size of the embedded master (default: 4MiB).'
complete -c mcctl -n '__mcctl_at bench cache' -l page-size -x -d 'Page size of the embedded master (default: 4KiB).'
complete -c mcctl -n '__mcctl_at bench cache' -l read-lease -x -d 'Read lease of the embedded master: an evicted object\'s pages wait this long in quarantine (default: 5s).'
complete -c mcctl -n '__mcctl_at bench cache' -l durability -x -a 'wal snapshot' -d 'Durability of the embedded master: wal, snapshot; wal fsyncs every change, evictions included (default: wal).'
complete -c mcctl -n '__mcctl_at bench cache' -l eviction-high-watermark -x -d 'Used share of all pages above which the embedded master\'s evictor starts (default: the master\'s, 0.90).'
complete -c mcctl -n '__mcctl_at bench cache' -l eviction-low-watermark -x -d 'Used share of all pages the embedded master\'s evictor brings the tier down to (default: the master\'s, 0.70).'
complete -c mcctl -n '__mcctl_at bench cache' -l lookups -x -d 'Lookups of the lookups-alone phase (default: 20000).'
complete -c mcctl -n '__mcctl_at bench cache' -l seed -x -d 'Seed of the traces (default: 1).'
complete -c mcctl -n '__mcctl_at bench cache' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench cache' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench cache' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench crossnode
complete -c mcctl -n '__mcctl_at bench crossnode' -f
complete -c mcctl -n '__mcctl_at bench crossnode' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench crossnode' -l objects -x -d 'Objects per size and path (default: 200).'
complete -c mcctl -n '__mcctl_at bench crossnode' -l sizes -x -d 'Object sizes (default: 64KiB,1MiB).'
complete -c mcctl -n '__mcctl_at bench crossnode' -l rounds -x -d 'Timed passes over the objects (default: 3).'
complete -c mcctl -n '__mcctl_at bench crossnode' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench crossnode' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench crossnode' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench layout
complete -c mcctl -n '__mcctl_at bench layout' -f
complete -c mcctl -n '__mcctl_at bench layout' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench layout' -l objects -x -d 'Objects per model (default: 100000).'
complete -c mcctl -n '__mcctl_at bench layout' -l size -x -d 'Bytes per object (default: 4KiB).'
complete -c mcctl -n '__mcctl_at bench layout' -l fsync -d 'fsync every per-key file, as a node does when it offloads through its local disk.'
complete -c mcctl -n '__mcctl_at bench layout' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench layout' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench layout' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench failover
complete -c mcctl -n '__mcctl_at bench failover' -f
complete -c mcctl -n '__mcctl_at bench failover' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench failover' -l mappings -x -d 'Mappings in the state before the first kill, rounded down to a multiple of 512 (default: 1000000).'
complete -c mcctl -n '__mcctl_at bench failover' -l rounds -x -d 'Kills (-9) of the leader, and as many stops with SIGTERM (default: 10).'
complete -c mcctl -n '__mcctl_at bench failover' -l lease-ttl -x -d 'The masters\' --ha-lease-ttl, whole seconds (default: 5s, the masters\' default).'
complete -c mcctl -n '__mcctl_at bench failover' -l throughput-rounds -x -d 'Throughput rounds per mode (with --ha, without), interleaved; 0 skips the comparison (default: 5).'
complete -c mcctl -n '__mcctl_at bench failover' -l throughput-transport -x -d 'How both clients of the throughput comparison send their batches: the Session stream or unary calls (default: stream).'
complete -c mcctl -n '__mcctl_at bench failover' -l throughput-keys -x -d 'Keys offloaded per throughput round, rounded down to a multiple of 512 (default: 100000).'
complete -c mcctl -n '__mcctl_at bench failover' -l etcd -r -F -d 'The etcd binary (Debian\'s package etcd-server) (default: /usr/bin/etcd).'
complete -c mcctl -n '__mcctl_at bench failover' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench failover' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench failover' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench promotion
complete -c mcctl -n '__mcctl_at bench promotion' -f
complete -c mcctl -n '__mcctl_at bench promotion' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench promotion' -l objects -x -d 'Objects per size (default: 200).'
complete -c mcctl -n '__mcctl_at bench promotion' -l sizes -x -d 'Object sizes (default: 64KiB,1MiB).'
complete -c mcctl -n '__mcctl_at bench promotion' -l rounds -x -d 'Timed passes over the objects (default: 3).'
complete -c mcctl -n '__mcctl_at bench promotion' -l cold -d 'Before each timed pass that preads, drop the bucket files from the page cache (GNU dd iflag=nocache), so the pread reads the disk as a pread of a shared filesystem crosses the network; the DRAM copies are not touched.'
complete -c mcctl -n '__mcctl_at bench promotion' -l promotion-interval -x -d 'Node A\'s --promotion-interval: how often it asks for tasks, 8 at a time (default: 200ms).'
complete -c mcctl -n '__mcctl_at bench promotion' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench promotion' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench promotion' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench pages
complete -c mcctl -n '__mcctl_at bench pages' -f
complete -c mcctl -n '__mcctl_at bench pages' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench pages' -l mappings -x -d 'Mappings in the table before the timed phases (default: 1000000).'
complete -c mcctl -n '__mcctl_at bench pages' -l batch -x -d 'Keys per batch (default: 64).'
complete -c mcctl -n '__mcctl_at bench pages' -l seconds -x -d 'Seconds of each timed phase (default: 5).'
complete -c mcctl -n '__mcctl_at bench pages' -l working-set -x -d 'Keys of the in-cache lookup phase (default: 1000).'
complete -c mcctl -n '__mcctl_at bench pages' -l key-length -x -d 'Characters of each key, its number padded with zeros (default: as short as the number, about 14; an engine\'s keys, a page hash in hex with a model and rank suffix, are 64 to 100).'
complete -c mcctl -n '__mcctl_at bench pages' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench pages' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench pages' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl bench chaos
complete -c mcctl -n '__mcctl_at bench chaos' -f
complete -c mcctl -n '__mcctl_at bench chaos' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at bench chaos' -l minutes -x -d 'Minutes of traffic and faults, 1 to 1440 (default: 5).'
complete -c mcctl -n '__mcctl_at bench chaos' -l seconds -x -d 'Seconds of traffic and faults instead of --minutes, 10 to 86400.'
complete -c mcctl -n '__mcctl_at bench chaos' -l seed -x -d 'Seed of the nemesis and the workers (default: a random one, printed).'
complete -c mcctl -n '__mcctl_at bench chaos' -l etcd-members -x -d 'etcd members, 1 or 3 (default: 3).'
complete -c mcctl -n '__mcctl_at bench chaos' -l faults -x -d 'Fault kinds the nemesis injects: all, none, or a list of kill_master, kill_node, kill_etcd, kill_client, pause_leader, pause_client, pause_node, pause_etcd, partition_leader_etcd, partition_leader_clients, partition_client, netem_loss, netem_delay, fill_root, flip_byte, truncate_bucket, delete_bucket, idle_flood, idle_session, snapshot_restart (default: all).'
complete -c mcctl -n '__mcctl_at bench chaos' -l java-workers -x -d 'Java client workers, 1 to 16 (default: 2).'
complete -c mcctl -n '__mcctl_at bench chaos' -l python-workers -x -d 'Python client workers, 0 to 16 (default: 2).'
complete -c mcctl -n '__mcctl_at bench chaos' -l python-client -r -F -d 'The clients/python directory of mcctl (default: clients/python of the checkout this mcctl was built in, or under the working directory).'
complete -c mcctl -n '__mcctl_at bench chaos' -l dir -r -F -d 'Where the run\'s folder goes (default: the system\'s temporary directory).'
complete -c mcctl -n '__mcctl_at bench chaos' -l keep -d 'Keep the run\'s folder even when it passed.'
complete -c mcctl -n '__mcctl_at bench chaos' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at bench chaos' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at bench chaos' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl shell
complete -c mcctl -n '__mcctl_at shell' -f
complete -c mcctl -n '__mcctl_at shell' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at shell' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at shell' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl config
complete -c mcctl -n '__mcctl_at config' -f
complete -c mcctl -n '__mcctl_at config' -a 'show' -d 'Print the effective settings and each value\'s source.'
complete -c mcctl -n '__mcctl_at config' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at config' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at config' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'

# mcctl config show
complete -c mcctl -n '__mcctl_at config show' -f
complete -c mcctl -n '__mcctl_at config show' -s o -l output -x -a 'text json' -d 'Report format: text, json (default: text).'
complete -c mcctl -n '__mcctl_at config show' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at config show' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at config show' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
complete -c mcctl -n '__mcctl_at config show' -l config -r -F -d 'YAML file of settings (default: $MCCTL_CONFIG, if set).'
complete -c mcctl -n '__mcctl_at config show' -l page-mode -x -d 'page mode of offloads through a node: true writes pages of the shared bucket files (DISTRIBUTED_DISK, no owner), false one file per key under the node\'s --local-disk (LOCAL_DISK, owned by the node); a node\'s setting, the master serves both [env MOONCAKE_DISTRIBUTED_PAGE_MODE; default true]'
complete -c mcctl -n '__mcctl_at config show' -l root -x -d 'directory that holds the bucket files, mounted at the same path on every node [env MOONCAKE_DISTRIBUTED_ROOT_DIR; default ./mooncake-data]'
complete -c mcctl -n '__mcctl_at config show' -l fs-type -x -d 'filesystem under the root: hf3fs (3FS) or posix (any local or shared POSIX directory) [env MOONCAKE_DISTRIBUTED_FS_TYPE; default posix]'
complete -c mcctl -n '__mcctl_at config show' -l bucket-count -x -d 'number of bucket files [env MOONCAKE_DISTRIBUTED_BUCKET_COUNT; default 256]'
complete -c mcctl -n '__mcctl_at config show' -l page-size -x -d 'bytes per page, the unit of allocation [env MOONCAKE_DISTRIBUTED_PAGE_SIZE; default 64KiB]'
complete -c mcctl -n '__mcctl_at config show' -l bucket-size -x -d 'bytes per bucket file [env MOONCAKE_DISTRIBUTED_BUCKET_SIZE; default 4GiB]'
complete -c mcctl -n '__mcctl_at config show' -l health-check -x -d 'run the checks of mcctl mount validate before laying out the root; any FAIL stops the master [env MOONCAKE_DISTRIBUTED_HEALTH_CHECK; default false]'
complete -c mcctl -n '__mcctl_at config show' -l preallocate -x -d 'reserve real space for every bucket file when the master starts (fallocate), so that a full filesystem shows at start, not as failed writes later [env MOONCAKE_DISTRIBUTED_PREALLOCATE_BUCKETS; default false]'
complete -c mcctl -n '__mcctl_at config show' -l io -x -d 'how bucket-file bytes move: posix (positional reads and writes through the kernel), usrbio (3FS\'s USRBIO rings, past FUSE; refused at start when the library, a function of it or a 3FS mount under the root is missing), or auto (usrbio when fs_type is hf3fs, the root is on a 3FS mount and the library loads, else posix) [env MOONCAKE_DISTRIBUTED_IO; default auto]'
complete -c mcctl -n '__mcctl_at config show' -l usrbio-library -x -d '3FS\'s USRBIO client library, which mcctl loads but does not ship [env MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY; default hf3fs_api_shared]'
complete -c mcctl -n '__mcctl_at config show' -l port -x -d 'gRPC port of the master [env MCCTL_MASTER_PORT; default 50051]'
complete -c mcctl -n '__mcctl_at config show' -l metrics-port -x -d 'HTTP port for Prometheus metrics (/metrics) and health (/-/healthy) [env MCCTL_METRICS_PORT; default 9003]'
complete -c mcctl -n '__mcctl_at config show' -l bind -x -d 'address the master listens on [env MCCTL_MASTER_BIND; default 0.0.0.0]'
complete -c mcctl -n '__mcctl_at config show' -l allocation-deadline -x -d 'time a writer has between allocate and notify before its pages are reclaimed [env MCCTL_ALLOCATION_DEADLINE; default 60s]'
complete -c mcctl -n '__mcctl_at config show' -l allocation-grace -x -d 'how long past its deadline an expired or dropped allocation\'s pages are kept from reuse (its writer may still be writing) [env MCCTL_ALLOCATION_GRACE; default 10s]'
complete -c mcctl -n '__mcctl_at config show' -l read-lease -x -d 'how long a mapping lookup keeps the object\'s pages from reuse after a remove or overwrite [env MCCTL_READ_LEASE; default 5s]'
complete -c mcctl -n '__mcctl_at config show' -l durability -x -d 'how acknowledged changes survive a crash of the master [env MCCTL_DURABILITY; default wal]'
complete -c mcctl -n '__mcctl_at config show' -l state-dir -x -d 'where the master keeps its write-ahead log and snapshots [env MCCTL_STATE_DIR; default <root>/master]'
complete -c mcctl -n '__mcctl_at config show' -l snapshot-interval -x -d 'time between periodic snapshots [env MCCTL_SNAPSHOT_INTERVAL; default 600s]'
complete -c mcctl -n '__mcctl_at config show' -l snapshot-retention -x -d 'snapshots kept (older ones and the log they cover are deleted) [env MCCTL_SNAPSHOT_RETENTION; default 2]'
complete -c mcctl -n '__mcctl_at config show' -l bucket-check-interval -x -d 'time between the master\'s checks that every bucket file is still the one it laid out (one stat each); a bucket whose file is missing or replaced takes no allocations.'
complete -c mcctl -n '__mcctl_at config show' -l wal-segment-size -x -d 'size at which a write-ahead log segment is closed and a new one begun [env MCCTL_WAL_SEGMENT_SIZE; default 64MiB]'
complete -c mcctl -n '__mcctl_at config show' -l busy-poll -x -d 'how long a transport thread keeps polling its connections after its last work before it sleeps: less latency per call where waking a sleeping CPU is slow (virtual machines), for up to this much CPU after each burst of calls [env MCCTL_BUSY_POLL; default 0s]'
complete -c mcctl -n '__mcctl_at config show' -l max-connections -x -d 'most client connections the gRPC port holds open at once; one more is closed as soon as it is accepted.'
complete -c mcctl -n '__mcctl_at config show' -l connection-idle-timeout -x -d 'a connection with no call in progress for this long is closed (a client connects again at its next call); a connection that never sends a call is closed after it too [env MCCTL_CONNECTION_IDLE_TIMEOUT; default 300s]'
complete -c mcctl -n '__mcctl_at config show' -l session-backlog -x -d 'most bytes of answers a Session stream holds that its client has not taken; an answer past it cancels the stream with RESOURCE_EXHAUSTED (the stream stops being read long before, while its client takes nothing) [env MCCTL_SESSION_BACKLOG; default 16MiB]'
complete -c mcctl -n '__mcctl_at config show' -l session-backlog-total -x -d 'most bytes of answers all Session streams together hold that their clients have not taken; an answer past it, to a client not taking answers, cancels that stream with RESOURCE_EXHAUSTED [env MCCTL_SESSION_BACKLOG_TOTAL; default 256MiB]'
complete -c mcctl -n '__mcctl_at config show' -l eviction -x -d 'evict least recently used objects when the tier fills (false: a full tier refuses allocations with NO_AVAILABLE_HANDLE) [env MCCTL_EVICTION; default true]'
complete -c mcctl -n '__mcctl_at config show' -l eviction-high-watermark -x -d 'used share of all pages above which the evictor starts (pages in quarantine not counted) [env MCCTL_EVICTION_HIGH_WATERMARK; default 0.90]'
complete -c mcctl -n '__mcctl_at config show' -l eviction-low-watermark -x -d 'used share of all pages the evictor brings the tier down to [env MCCTL_EVICTION_LOW_WATERMARK; default 0.70]'
complete -c mcctl -n '__mcctl_at config show' -l tls-cert -x -d 'PEM certificate chain the master serves gRPC and metrics with; needs tls_key [env MCCTL_MASTER_TLS_CERT; default computed]'
complete -c mcctl -n '__mcctl_at config show' -l tls-key -x -d 'private key of tls_cert [env MCCTL_MASTER_TLS_KEY; default computed]'
complete -c mcctl -n '__mcctl_at config show' -l tls-client-ca -x -d 'CA certificates a gRPC client\'s certificate must chain to (mutual TLS); needs tls_cert [env MCCTL_MASTER_TLS_CLIENT_CA; default computed]'
complete -c mcctl -n '__mcctl_at config show' -l tokens-file -x -d 'tenant tokens (SHA-256 hashes) and their tenants and roles; read at start and on SIGHUP [env MCCTL_MASTER_TOKENS_FILE; default computed]'
complete -c mcctl -n '__mcctl_at config show' -l ha -x -d 'run for leadership on etcd: the leader serves, standbys follow the shared state and take over (docs/ha.md) [env MCCTL_HA; default computed]'
complete -c mcctl -n '__mcctl_at config show' -l ha-lease-ttl -x -d 'the leader\'s etcd lease: a standby takes over about this long after the leader dies; the leader stops answering changes a quarter of it before the lease can expire [env MCCTL_HA_LEASE_TTL; default 5s]'
complete -c mcctl -n '__mcctl_at config show' -l ha-start-empty -x -d 'with --ha: when the shared state cannot be read, move it aside into unreadable-<time>/ and start empty (every cached object is lost to the cache; docs/ha.md) [env MCCTL_HA_START_EMPTY; default false]'
complete -c mcctl -n '__mcctl_at config show' -l client-ttl -x -d 'a node the master has not heard from (Ping) within this long is dead: its MEMORY and LOCAL_DISK replicas are removed (Mooncake\'s client_ttl) [env MCCTL_CLIENT_TTL; default 10s]'
complete -c mcctl -n '__mcctl_at config show' -l promotion-reads -x -d 'reads of a DISTRIBUTED_DISK object within the admission window (about the last 262144 lookups) that queue it for promotion into a node\'s DRAM segment; 0: only mcctl promote queues objects [env MCCTL_PROMOTION_READS; default 3]'
complete -c mcctl -n '__mcctl_at config show' -l promotion-max-tasks -x -d 'most promotion tasks queued or in progress at once; admitted objects past it wait for the next admission [env MCCTL_PROMOTION_MAX_TASKS; default 1024]'
complete -c mcctl -n '__mcctl_at config show' -l kv-events-endpoint -x -d 'where the master publishes KV events (vLLM\'s schema, ZeroMQ PUB) for what the shared tier holds; the i-th tenant of kv_events_tenants publishes on the port plus i [env MCCTL_KV_EVENTS_ENDPOINT; default computed]'
complete -c mcctl -n '__mcctl_at config show' -l kv-events-replay-endpoint -x -d 'where a subscriber asks for the batches it missed (ZeroMQ ROUTER: it sends the 8-byte sequence to start from); the i-th tenant answers on the port plus i [env MCCTL_KV_EVENTS_REPLAY_ENDPOINT; default computed]'
complete -c mcctl -n '__mcctl_at config show' -l kv-events-topic -x -d 'the topic of each tenant\'s KV events (llm-d reads kv@<pod>@<model>: pool:<name> marks a tier shared by every pod) [env MCCTL_KV_EVENTS_TOPIC; default kv@pool:mcctl@{tenant}]'
complete -c mcctl -n '__mcctl_at config show' -l kv-events-tenants -x -d 'the tenants whose KV events are published, each on its own endpoints (no subscriber of one learns another\'s keys) [env MCCTL_KV_EVENTS_TENANTS; default default]'
complete -c mcctl -n '__mcctl_at config show' -l kv-events-buffer -x -d 'KV event batches kept per tenant for the replay endpoint (and rebuilt from the log after a restart or a fail-over) [env MCCTL_KV_EVENTS_BUFFER; default 1000]'
complete -c mcctl -n '__mcctl_at config show' -l kv-events-queue -x -d 'KV events waiting to be published at most; past it an event is dropped (counted, and its batch is not sent: subscribers see a gap in the sequence) rather than slowing the master [env MCCTL_KV_EVENTS_QUEUE; default 65536]'

# mcctl completion
complete -c mcctl -n '__mcctl_at completion' -f
complete -c mcctl -n '__mcctl_at completion' -s h -l help -d 'Show this help message and exit.'
complete -c mcctl -n '__mcctl_at completion' -s V -l version -d 'Print version information and exit.'
complete -c mcctl -n '__mcctl_at completion' -s x -l stacktrace -d 'On error, print the stack trace as well as the one-line message.'
