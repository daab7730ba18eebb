/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -netdev user on libslirp. Slirp's sockets are polled by a GSource of our
 * own in the default main context: prepare() asks slirp which fds and what
 * timeout it wants (slirp_pollfds_fill), GLib polls them with everything
 * else, dispatch() hands the results back (slirp_pollfds_poll). Slirp's
 * timers are GSources with a ready time. Every libslirp call is made with
 * the BQL held: Slirp is not thread-safe, and the BQL is what serialises
 * the main loop against a vCPU thread sending a frame from its MMIO exit.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "net/net.h"
#include "net/slirp.h"
#include "slirp-cpr.h"
#include "trace/trace.h"
#include <slirp/libslirp.h>

/* One fd slirp asked to poll, registered with the poll source. */
typedef struct SlirpFd {
    int fd;
    gpointer tag;               /* g_source_add_unix_fd() */
    GIOCondition cond;          /* what it is polled for now */
    unsigned round;             /* the last fill round that asked for it */
} SlirpFd;

typedef struct SlirpPollSource SlirpPollSource;

typedef struct NetSlirpState {
    NetClientState *nc;         /* the backend; immutable */
    Slirp *slirp;               /* BQL for every call into it */
    SlirpPollSource *poll;      /* attached to the default context; main thread */
    /* Owned by the poll source's callbacks (main thread, BQL): */
    GHashTable *fds;            /* fd -> SlirpFd, what is registered now */
    GPtrArray *polled;          /* SlirpFd in the order of the last fill: slirp's idx */
    unsigned round;             /* fill rounds so far */
    gint64 deadline;            /* when slirp wants polling (timers, held frames), or -1 */
} NetSlirpState;

struct SlirpPollSource {
    GSource source;
    NetSlirpState *s;
};

typedef struct SlirpTimer {
    GSource source;
    NetSlirpState *s;
    SlirpTimerId id;
    void *cb_opaque;
} SlirpTimer;

static const NetClientInfo net_slirp_info;

/*
 * Slirp's clock. QEMU gives it the VM clock, which stops while the VM is
 * paused; here it is the host's monotonic clock (slirp's saved state holds
 * no absolute times, so nothing of it has to travel with a migration).
 */
static int64_t net_slirp_clock_ns(void)
{
    return get_clock_ns();
}

static GIOCondition slirp_events_to_gio(int events)
{
    return (events & SLIRP_POLL_IN ? G_IO_IN : 0) |
           (events & SLIRP_POLL_OUT ? G_IO_OUT : 0) |
           (events & SLIRP_POLL_PRI ? G_IO_PRI : 0) |
           (events & SLIRP_POLL_ERR ? G_IO_ERR : 0) |
           (events & SLIRP_POLL_HUP ? G_IO_HUP : 0);
}

static int gio_to_slirp_events(GIOCondition cond)
{
    return (cond & G_IO_IN ? SLIRP_POLL_IN : 0) |
           (cond & G_IO_OUT ? SLIRP_POLL_OUT : 0) |
           (cond & G_IO_PRI ? SLIRP_POLL_PRI : 0) |
           (cond & (G_IO_ERR | G_IO_NVAL) ? SLIRP_POLL_ERR : 0) |
           (cond & G_IO_HUP ? SLIRP_POLL_HUP : 0);
}

/*
 * slirp_pollfds_fill's add_poll: keep the fd registered and touch it only
 * when slirp wants something else from it. Adding, changing or removing a
 * poll fd wakes the context (one more round), so redoing them every round
 * would keep the main loop spinning.
 */
static int slirp_add_poll(int fd, int events, void *opaque)
{
    NetSlirpState *s = opaque;
    GSource *source = &s->poll->source;
    GIOCondition cond = slirp_events_to_gio(events);
    SlirpFd *e = g_hash_table_lookup(s->fds, GINT_TO_POINTER(fd));

    if (!e) {
        e = g_new0(SlirpFd, 1);
        e->fd = fd;
        e->cond = cond;
        e->tag = g_source_add_unix_fd(source, fd, cond);
        g_hash_table_insert(s->fds, GINT_TO_POINTER(fd), e);
    } else {
        if (e->round == s->round) {
            cond |= e->cond;    /* asked twice in one round: poll for both */
        }
        if (cond != e->cond) {
            g_source_modify_unix_fd(source, e->tag, cond);
            e->cond = cond;
        }
    }
    e->round = s->round;
    g_ptr_array_add(s->polled, e);
    return s->polled->len - 1;
}

static gboolean slirp_fd_unused(gpointer key, gpointer value, gpointer opaque)
{
    NetSlirpState *s = opaque;
    SlirpFd *e = value;

    if (e->round == s->round) {
        return FALSE;
    }
    g_source_remove_unix_fd(&s->poll->source, e->tag);
    return TRUE;                /* the table frees e */
}

static int slirp_get_revents(int idx, void *opaque)
{
    NetSlirpState *s = opaque;
    SlirpFd *e;

    if (idx < 0 || (guint)idx >= s->polled->len) {
        return 0;
    }
    e = g_ptr_array_index(s->polled, idx);
    return gio_to_slirp_events(g_source_query_unix_fd(&s->poll->source, e->tag));
}

static gboolean slirp_poll_prepare(GSource *source, gint *timeout)
{
    NetSlirpState *s = ((SlirpPollSource *)source)->s;
    gint64 now = g_source_get_time(source);
    uint32_t ms = UINT32_MAX;

    s->round++;
    g_ptr_array_set_size(s->polled, 0);
    if (net_slirp_cpr_paused()) {
        /* Not our guest (a live update): its sockets are the other process's to read. */
        g_hash_table_foreach_remove(s->fds, slirp_fd_unused, s);
        *timeout = 50;
        return FALSE;
    }
    slirp_pollfds_fill(s->slirp, &ms, slirp_add_poll, s);
    g_hash_table_foreach_remove(s->fds, slirp_fd_unused, s);
    if (ms != UINT32_MAX) {
        gint64 want = now + (gint64)ms * 1000;

        /*
         * Keep the earlier deadline until dispatch: a main loop woken more
         * often than slirp's timeout (a busy NIC rings it for every burst)
         * prepares again and again, and a deadline moved on each time
         * would never come, starving slirp's timers and ARP retries.
         */
        if (s->deadline < 0 || want < s->deadline) {
            s->deadline = want;
        }
    }
    *timeout = s->deadline < 0 ? -1 :
               CLAMP((s->deadline - now + 999) / 1000, 0, (gint64)G_MAXINT);
    return FALSE;
}

static gboolean slirp_poll_check(GSource *source)
{
    NetSlirpState *s = ((SlirpPollSource *)source)->s;

    for (guint i = 0; i < s->polled->len; i++) {
        SlirpFd *e = g_ptr_array_index(s->polled, i);

        if (g_source_query_unix_fd(source, e->tag)) {
            return TRUE;
        }
    }
    return s->deadline >= 0 && g_source_get_time(source) >= s->deadline;
}

static gboolean slirp_poll_dispatch(GSource *source, GSourceFunc cb, gpointer data)
{
    NetSlirpState *s = ((SlirpPollSource *)source)->s;

    assert(bql_locked());
    /* slirp runs its timers now; the next prepare sets the next deadline. */
    s->deadline = -1;
    slirp_pollfds_poll(s->slirp, 0, slirp_get_revents, s);
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs slirp_poll_funcs = {
    .prepare = slirp_poll_prepare,
    .check = slirp_poll_check,
    .dispatch = slirp_poll_dispatch,
};

static gboolean slirp_timer_dispatch(GSource *source, GSourceFunc cb, gpointer data)
{
    SlirpTimer *t = (SlirpTimer *)source;

    assert(bql_locked());
    g_source_set_ready_time(source, -1);    /* one shot until timer_mod again */
    slirp_handle_timer(t->s->slirp, t->id, t->cb_opaque);
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs slirp_timer_funcs = {
    .dispatch = slirp_timer_dispatch,
};

static void *net_slirp_timer_new_opaque(SlirpTimerId id, void *cb_opaque, void *opaque)
{
    SlirpTimer *t = (SlirpTimer *)g_source_new(&slirp_timer_funcs, sizeof(SlirpTimer));

    t->s = opaque;
    t->id = id;
    t->cb_opaque = cb_opaque;
    g_source_set_ready_time(&t->source, -1);
    g_source_attach(&t->source, NULL);
    return t;
}

static void net_slirp_timer_free(void *timer, void *opaque)
{
    g_source_destroy(timer);
    g_source_unref(timer);
}

/* @expire_ms is on net_slirp_clock_ns()'s scale, in milliseconds. */
static void net_slirp_timer_mod(void *timer, int64_t expire_ms, void *opaque)
{
    int64_t delta_ns = expire_ms * 1000000 - net_slirp_clock_ns();

    g_source_set_ready_time(timer, g_get_monotonic_time() + MAX(delta_ns, 0) / 1000);
}

static void net_slirp_init_completed(Slirp *slirp, void *opaque)
{
    NetSlirpState *s = opaque;

    s->slirp = slirp;
}

/* A frame from slirp to the guest. */
static ssize_t net_slirp_send_packet(const void *buf, size_t len, void *opaque)
{
    NetSlirpState *s = opaque;

    /*
     * A frame the guest cannot take now waits in its queue or is dropped
     * there; TCP retransmits. Never report an error: libslirp logs every
     * one as critical.
     */
    net_send_packet(s->nc, buf, len);
    return len;
}

static void net_slirp_guest_error(const char *msg, void *opaque)
{
    NetSlirpState *s = opaque;

    TRACE_EVENT(slirp_guest_error, "netdev=%s %s", s->nc->name, msg);
}

static int64_t net_slirp_clock_get_ns(void *opaque)
{
    return net_slirp_clock_ns();
}

/* The set of fds is read again at every prepare(), so nothing to do here. */
static void net_slirp_register_poll_fd(int fd, void *opaque)
{
}

static void net_slirp_unregister_poll_fd(int fd, void *opaque)
{
}

static void net_slirp_notify(void *opaque)
{
    qemu_notify_event();
}

static const SlirpCb net_slirp_callbacks = {
    .send_packet = net_slirp_send_packet,
    .guest_error = net_slirp_guest_error,
    .clock_get_ns = net_slirp_clock_get_ns,
    .timer_free = net_slirp_timer_free,
    .timer_mod = net_slirp_timer_mod,
    .register_poll_fd = net_slirp_register_poll_fd,
    .unregister_poll_fd = net_slirp_unregister_poll_fd,
    .notify = net_slirp_notify,
    .init_completed = net_slirp_init_completed,
    .timer_new_opaque = net_slirp_timer_new_opaque,
};

/* A frame from the guest (the frontend's TX path), in any thread with the BQL. */
static ssize_t net_slirp_receive(NetClientState *nc, const uint8_t *buf, size_t len)
{
    NetSlirpState *s = nc->opaque;

    slirp_input(s->slirp, buf, len);
    /*
     * Poll slirp at the next main-loop round, as QEMU polls it on every
     * round: only slirp_pollfds_poll() sends what waited for this frame
     * (an ARP reply releases the packets held for it, which slirp drops a
     * second after it asked), and the frame may have opened a socket or
     * started a TCP timer. A main loop asleep in poll must wake for that.
     */
    s->deadline = 0;
    if (!g_main_context_is_owner(g_main_context_default())) {
        qemu_notify_event();
    }
    return len;
}

static void net_slirp_cleanup(NetClientState *nc)
{
    NetSlirpState *s = nc->opaque;

    /* slirp_cleanup frees slirp's timers through timer_free. */
    slirp_cleanup(s->slirp);
    g_source_destroy(&s->poll->source);
    g_source_unref(&s->poll->source);
    g_hash_table_destroy(s->fds);
    g_ptr_array_unref(s->polled);
    g_free(s);
}

static const NetClientInfo net_slirp_info = {
    .type = NET_CLIENT_DRIVER_USER,
    .receive = net_slirp_receive,
    .cleanup = net_slirp_cleanup,
};

static NetSlirpState *net_slirp_state(NetClientState *nc)
{
    assert(nc->info == &net_slirp_info);
    return nc->opaque;
}

static bool net_slirp_hostfwd_set(NetSlirpState *s, const char *rule,
                                  const NetSlirpHostFwd *fwd, Error **errp)
{
    bool ok;

    net_slirp_cpr_adopt_begin(fwd);
    ok = slirp_add_hostfwd(s->slirp, fwd->udp, fwd->host_addr, fwd->host_port,
                           fwd->guest_addr, fwd->guest_port) == 0;
    net_slirp_cpr_adopt_end(fwd, ok);
    if (!ok) {
        error_setg(errp, "Could not set up host forwarding rule '%s'", rule);
        return false;
    }
    return true;
}

NetClientState *net_slirp_create(const char *id, const NetSlirpConfig *cfg, Error **errp)
{
    NetSlirpState *s = g_new0(NetSlirpState, 1);
    SlirpConfig sc = {
        .version = 4,           /* the highest libslirp 4.7 knows */
        .restricted = cfg->restricted,
        .in_enabled = cfg->ipv4,
        .vnetwork = cfg->net,
        .vnetmask = cfg->mask,
        .vhost = cfg->host,
        .in6_enabled = cfg->ipv6,
        .vprefix_addr6 = cfg->prefix6,
        .vprefix_len = cfg->prefix6_len,
        .vhost6 = cfg->host6,
        .vhostname = cfg->hostname,
        .vdhcp_start = cfg->dhcp_start,
        .vnameserver = cfg->dns,
        .vnameserver6 = cfg->dns6,
        .vdomainname = cfg->domainname,
    };
    char net[INET_ADDRSTRLEN];

    assert(bql_locked());
    s->fds = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    s->polled = g_ptr_array_new();
    s->deadline = -1;
    s->poll = (SlirpPollSource *)g_source_new(&slirp_poll_funcs, sizeof(SlirpPollSource));
    s->poll->s = s;
    /* slirp_new calls init_completed, which sets s->slirp, before any timer. */
    if (!slirp_new(&sc, &net_slirp_callbacks, s)) {
        error_setg(errp, "could not initialize user networking");
        g_source_unref(&s->poll->source);
        g_hash_table_destroy(s->fds);
        g_ptr_array_unref(s->polled);
        g_free(s);
        return NULL;
    }
    /* From here on net_client_free() undoes everything (net_slirp_cleanup). */
    s->nc = net_client_new(&net_slirp_info, "user", id, s);
    inet_ntop(AF_INET, &cfg->net, net, sizeof(net));
    net_client_set_info_str(s->nc, "net=%s,restrict=%s", net, cfg->restricted ? "on" : "off");
    g_source_attach(&s->poll->source, NULL);
    for (guint i = 0; i < cfg->hostfwds->len; i++) {
        if (!net_slirp_hostfwd_set(s, g_ptr_array_index(cfg->hostfwd_rules, i),
                                   &g_array_index(cfg->hostfwds, NetSlirpHostFwd, i), errp)) {
            net_client_free(s->nc);
            return NULL;
        }
    }
    return s->nc;
}

bool net_slirp_hostfwd_add(NetClientState *nc, const char *rule, Error **errp)
{
    NetSlirpHostFwd fwd;

    return net_slirp_hostfwd_parse(rule, &fwd, errp) &&
           net_slirp_hostfwd_set(net_slirp_state(nc), rule, &fwd, errp);
}

int net_slirp_hostfwd_remove(NetClientState *nc, const char *rule)
{
    NetSlirpHostFwd fwd;

    if (!net_slirp_hostfwd_parse_host(rule, &fwd)) {
        return -1;
    }
    net_slirp_cpr_forget(&fwd);
    return slirp_remove_hostfwd(net_slirp_state(nc)->slirp, fwd.udp, fwd.host_addr,
                                fwd.host_port) == 0;
}

char *net_slirp_connection_info(NetClientState *nc)
{
    return slirp_connection_info(net_slirp_state(nc)->slirp);
}

int net_slirp_state_version(void)
{
    return slirp_state_version();
}

static ssize_t net_slirp_state_write(const void *buf, size_t len, void *opaque)
{
    g_byte_array_append(opaque, buf, len);
    return len;
}

GByteArray *net_slirp_state_save(NetClientState *nc)
{
    GByteArray *out = g_byte_array_new();

    slirp_state_save(net_slirp_state(nc)->slirp, net_slirp_state_write, out);
    return out;
}

typedef struct StateReader {
    const uint8_t *buf;
    size_t len, pos;
    bool short_read;            /* slirp asked for more than there was */
} StateReader;

/*
 * libslirp does not notice a read that comes back short (it loads zeroes),
 * so the reader remembers it and the load fails here instead.
 */
static ssize_t net_slirp_state_read(void *buf, size_t len, void *opaque)
{
    StateReader *r = opaque;
    size_t n = MIN(len, r->len - r->pos);

    if (n < len) {
        r->short_read = true;
        memset((uint8_t *)buf + n, 0, len - n);
    }
    if (n) {
        memcpy(buf, r->buf + r->pos, n);
    }
    r->pos += n;
    return n;
}

bool net_slirp_state_load(NetClientState *nc, int version, const uint8_t *buf, size_t len,
                          Error **errp)
{
    StateReader r = { .buf = buf, .len = len };
    int ret;

    if (version <= 0 || version > slirp_state_version()) {
        error_setg(errp, "slirp state version %d is not supported (at most %d)", version,
                   slirp_state_version());
        return false;
    }
    /*
     * The state opens with one record per guestfwd socket (a non-zero
     * byte, then the socket) and a zero byte. We have no guestfwd, and
     * libslirp would refuse such a record only after it sized the socket's
     * buffers from the stream, so it never sees one.
     */
    if (len == 0 || buf[0] != 0) {
        error_setg(errp, "slirp state of netdev '%s' %s", nc->name,
                   len ? "holds guestfwd sockets, which this binary never has" : "is empty");
        return false;
    }
    ret = slirp_state_load(net_slirp_state(nc)->slirp, version, net_slirp_state_read, &r);
    if (ret < 0) {
        error_setg(errp, "slirp state of netdev '%s' could not be loaded (%d)", nc->name, ret);
        return false;
    }
    if (r.short_read || r.pos != r.len) {
        error_setg(errp, "slirp state of netdev '%s' is %zu bytes, slirp read %zu%s", nc->name,
                   len, r.pos, r.short_read ? " and wanted more" : "");
        return false;
    }
    return true;
}
