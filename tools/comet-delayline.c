/* comet-delayline: a link with propagation delay between two network
 * namespaces, in user space (netem is not built into every kernel; TUN is).
 * It creates one TUN device in each namespace and forwards every IP packet
 * one reads to the other after a wire of the given rate (FIFO, bounded
 * queue, per-packet framing) and a fixed one-way delay (delayline.h), so the
 * two namespaces see a real round-trip time and a real bandwidth-delay
 * product. scripts/netns-veth.sh runs it (COMET_NETNS_DELAY). */
#include "delayline.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/virtio_net.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROG "comet-delayline"

static const char usage[]
    = "usage: " PROG " -a DEV@NETNS -b DEV@NETNS -r RATE [-d DELAY] [options]\n"
      "\n"
      "Joins two network namespaces by a TUN device in each and forwards every\n"
      "IP packet read from one to the other through an emulated link: a FIFO of\n"
      "at most -q packets in front of a wire of RATE (each packet takes\n"
      "(length + framing) * 8 / RATE), then DELAY of propagation. Both\n"
      "directions are independent wires. Runs until SIGINT/SIGTERM, then prints\n"
      "per direction packets, bytes, drops and how late packets left against\n"
      "their schedule. The devices exist while it runs; address them with ip.\n"
      "\n"
      "  -a DEV@NETNS   TUN device DEV created in namespace NETNS (a name under\n"
      "                 /run/netns, or a path such as /proc/PID/ns/net; DEV alone:\n"
      "                 this process's namespace)\n"
      "  -b DEV@NETNS   the other end\n"
      "  -r RATE        wire rate, as tc writes it: 500mbit, 1gbit, 12500kbps\n"
      "  -d DELAY       one-way propagation delay: 100us, 0.2ms, 0 (default 0)\n"
      "  -m MTU         the devices' MTU (default 1500, Ethernet)\n"
      "  -f BYTES       framing per packet on the wire beside the IP packet\n"
      "                 (default 38: Ethernet header 14, FCS 4, preamble 8 and\n"
      "                 inter-frame gap 12, IEEE 802.3)\n"
      "  -q PACKETS     transmit queue per direction (default 1000: Linux's\n"
      "                 txqueuelen for Ethernet devices)\n"
      "  -p PRIO        SCHED_FIFO priority (default 10; 0: normal scheduling).\n"
      "                 Busy-polling MPI ranks on the same cores would otherwise\n"
      "                 delay the forwarding by whole scheduler slices\n"
      "  -g SEGS        TCP segmentation offload: the kernel hands over bursts of\n"
      "                 at most SEGS segments, charged as SEGS packets on the\n"
      "                 wire and delivered when the last one arrives (a NIC's\n"
      "                 TSO, and its interrupt moderation before the receiving\n"
      "                 stack sees them). Default: the segments of the MTU the\n"
      "                 wire serialises in 250 us, the interval of e1000e's\n"
      "                 default (dynamic conservative) moderation for bulk\n"
      "                 traffic, 4000 interrupts/s (Linux Documentation/\n"
      "                 networking/device_drivers/ethernet/intel/e1000e.rst);\n"
      "                 0: no offloads, every packet read and written alone\n"
      "  -w FILE        write FILE (atomically) once both devices exist\n"
      "  -t SECONDS     deadline: stop after SECONDS with an error (exit 1), so\n"
      "                 a line nobody stops cannot outlive its use\n"
      "  -P             stop with an error (exit 1) when the process that started\n"
      "                 it ends (a line whose owner died would otherwise keep\n"
      "                 both namespaces alive: each device holds its namespace)\n"
      "  -h             this help\n"
      "\n"
      "Exit status: 0 stopped by a signal, 1 an error or a deadline (one line),\n"
      "2 bad input.\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}

static int die(const char *flag, const char *what, const char *arg)
{
    fprintf(stderr, PROG ": %s: %s%s%s\n", flag, what, arg ? ": " : "", arg ? arg : "");
    return 2;
}

/* Sets the largest TSO super-packet (in segments) the kernel hands device
 * ifindex of this namespace, by rtnetlink (IFLA_GSO_MAX_SEGS, what
 * `ip link set DEV gso_max_segs N` sends). Returns 0 or a negative errno. */
static int set_gso_max_segs(int ifindex, unsigned segs)
{
    struct {
        struct nlmsghdr nh;
        struct ifinfomsg ifi;
        char attrs[64];
    } req;
    memset(&req, 0, sizeof req);
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof req.ifi);
    req.nh.nlmsg_type = RTM_NEWLINK;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    req.ifi.ifi_family = AF_UNSPEC;
    req.ifi.ifi_index = ifindex;
    struct rtattr *a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
    a->rta_type = IFLA_GSO_MAX_SEGS;
    a->rta_len = RTA_LENGTH(sizeof(uint32_t));
    const uint32_t v = segs;
    memcpy(RTA_DATA(a), &v, sizeof v);
    req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
    const int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (s < 0)
        return -errno;
    int rc = 0;
    char ack[512];
    if (send(s, &req, req.nh.nlmsg_len, 0) < 0)
        rc = -errno;
    else {
        const ssize_t r = recv(s, ack, sizeof ack, 0);
        const struct nlmsghdr *h = (const struct nlmsghdr *)ack;
        if (r < 0)
            rc = -errno;
        else if ((size_t)r >= NLMSG_LENGTH(sizeof(struct nlmsgerr)) && h->nlmsg_type == NLMSG_ERROR)
            rc = ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
    }
    close(s);
    return rc;
}

/* Creates TUN device dev in namespace ns (NULL: ours) with the given MTU;
 * with burst > 0 also with a virtio-net header on every packet and
 * checksum and TCP segmentation offloads, TSO super-packets of at most
 * burst segments. Returns its non-blocking fd or -1 with err set. */
static int tun_open(
    const char *dev, const char *ns, int mtu, unsigned burst, char *err, size_t errlen)
{
    int self = -1, target = -1, fd = -1, sock = -1;
    if (ns) {
        char path[512];
        snprintf(path, sizeof path, "%s%s", strchr(ns, '/') ? "" : "/run/netns/", ns);
        self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        target = open(path, O_RDONLY | O_CLOEXEC);
        if (self < 0 || target < 0) {
            snprintf(err, errlen, "namespace %s: %s", path, strerror(errno));
            goto fail;
        }
        if (setns(target, CLONE_NEWNET) != 0) {
            snprintf(err, errlen, "cannot enter namespace %s: %s", path, strerror(errno));
            goto fail;
        }
    }
    fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI | (burst ? IFF_VNET_HDR : 0);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", dev);
    if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) {
        snprintf(err, errlen, "cannot create TUN device %s: %s", dev, strerror(errno));
        goto fail;
    }
    if (burst) {
        /* the kernel then neither checksums nor segments what it sends us,
         * and takes what we write as it was read: the per-packet work of
         * the stack and of this program falls by the burst (a NIC's TSO
         * and GRO) */
        const int vh = (int)sizeof(struct virtio_net_hdr);
        if (ioctl(fd, TUNSETVNETHDRSZ, &vh) != 0
            || ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) != 0) {
            snprintf(err, errlen, "cannot enable offloads on %s: %s", dev, strerror(errno));
            goto fail;
        }
    }
    /* the MTU bounds what one read returns: the packet slots are that long */
    sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifr.ifr_mtu = mtu;
    if (sock < 0 || ioctl(sock, SIOCSIFMTU, &ifr) != 0) {
        snprintf(err, errlen, "cannot set MTU %d on %s: %s", mtu, dev, strerror(errno));
        goto fail;
    }
    if (burst) {
        int e = ioctl(sock, SIOCGIFINDEX, &ifr) != 0 ? -errno : 0;
        if (!e)
            e = set_gso_max_segs(ifr.ifr_ifindex, burst);
        if (e) {
            snprintf(err, errlen, "cannot set gso_max_segs %u on %s: %s", burst, dev, strerror(-e));
            goto fail;
        }
    }
    close(sock);
    sock = -1;
    if (ns && setns(self, CLONE_NEWNET) != 0) {
        snprintf(err, errlen, "cannot return to our namespace: %s", strerror(errno));
        goto fail;
    }
    if (self >= 0)
        close(self);
    if (target >= 0)
        close(target);
    return fd;
fail:
    if (sock >= 0)
        close(sock);
    if (fd >= 0)
        close(fd);
    if (self >= 0) {
        (void)setns(self, CLONE_NEWNET);
        close(self);
    }
    if (target >= 0)
        close(target);
    return -1;
}

/* One direction: the link arithmetic plus a ring of packets in flight. With
 * offloads (burst > 0) every packet read carries a virtio-net header first
 * and may be a TSO super-packet of up to 64 KiB: the packets are kept in a
 * ring of bytes sized for what can be in flight, not in MTU slots. */
typedef struct line {
    comet_delayline_dir link;
    int in, out; /* read from in, write to out */
    size_t vhdr; /* virtio-net header bytes before each packet (0: no offloads) */
    size_t cap, head, n; /* packet entries: capacity, first, count */
    size_t bcap, btail, bused; /* the byte ring: capacity, next free offset, bytes held */
    unsigned char *buf; /* bcap bytes + one largest read beyond them */
    double *due; /* delivery time of each entry */
    size_t *len, *off; /* bytes (what the ring holds of it), offset in buf */
    uint64_t bytes, bursts, late_n, malformed, write_err;
    double late_sum, late_max;
} line;

/* The largest read: a 64 KiB IP packet plus the virtio-net header. */
#define LINE_READ_MAX (65536 + sizeof(struct virtio_net_hdr))

static int line_init(line *l, int in, int out, double bps, double delay, unsigned framing,
    size_t queue, int mtu, size_t vhdr)
{
    memset(l, 0, sizeof *l);
    l->in = in;
    l->out = out;
    l->vhdr = vhdr;
    int rc = comet_delayline_dir_init(&l->link, bps, delay, framing, queue);
    if (rc)
        return rc;
    /* in flight: the queue, plus what the delay holds (packets of at least
     * an IPv4 header, one every serialisation time), plus one; each packet
     * on the wire is at most an MTU, so the bytes in flight are at most that
     * many MTUs (a super-packet holds fewer bytes than its segments) */
    const double min_ser = (20.0 + framing) * l->link.ns_per_byte;
    const double held = ceil(delay / min_ser) + 2;
    if (held > 1e7)
        return -E2BIG;
    l->cap = queue + (size_t)held;
    const double bcap = (double)l->cap * (double)((size_t)mtu + vhdr);
    if (bcap > (double)(1u << 30))
        return -E2BIG;
    l->bcap = (size_t)bcap;
    /* an entry starting near the end runs on past bcap instead of wrapping */
    l->buf = malloc(l->bcap + LINE_READ_MAX);
    l->due = malloc(l->cap * sizeof(double));
    l->len = malloc(l->cap * sizeof(size_t));
    l->off = malloc(l->cap * sizeof(size_t));
    return l->buf && l->due && l->len && l->off ? 0 : -ENOMEM;
}

static void line_free(line *l)
{
    comet_delayline_dir_free(&l->link);
    free(l->buf);
    free(l->due);
    free(l->len);
    free(l->off);
}

/* Segments of a packet read with its virtio-net header h: a TCP
 * segmentation-offload super-packet is cut into ceil(payload / gso_size)
 * segments that each repeat its IP and TCP headers (*hdr bytes, read from
 * the packet itself: the header's hdr_len is the kernel's linear length,
 * not the headers'); anything else is one packet. */
static size_t packet_segs(const unsigned char *h, const unsigned char *p, size_t len, size_t *hdr)
{
    struct virtio_net_hdr v;
    memcpy(&v, h, sizeof v);
    const unsigned type = v.gso_type & (unsigned)~VIRTIO_NET_HDR_GSO_ECN;
    const size_t gso = le16toh(v.gso_size);
    *hdr = 0;
    if ((type != VIRTIO_NET_HDR_GSO_TCPV4 && type != VIRTIO_NET_HDR_GSO_TCPV6) || gso == 0
        || len < 40)
        return 1;
    size_t ip = (p[0] >> 4) == 4 ? (size_t)(p[0] & 15) * 4 : 40;
    if (ip + 20 > len)
        return 1;
    const size_t h_all = ip + (size_t)(p[ip + 12] >> 4) * 4;
    if (h_all >= len)
        return 1;
    *hdr = h_all;
    return (len - h_all + gso - 1) / gso;
}

/* Reads every packet waiting on l->in and schedules it. */
static void line_read(line *l, unsigned char *scratch, size_t scratch_len)
{
    for (;;) {
        const ssize_t r = read(l->in, scratch, scratch_len);
        if (r <= 0)
            return; /* EAGAIN: drained (errors: the device went away; stop decides) */
        const double t = now_ns();
        if ((size_t)r <= l->vhdr) {
            l->malformed++;
            continue;
        }
        if (l->n == l->cap || (size_t)r > l->bcap - l->bused) {
            /* cannot happen within the bound line_init sized */
            l->link.dropped++;
            continue;
        }
        size_t hdr = 0, segs = 1;
        if (l->vhdr)
            segs = packet_segs(scratch, scratch + l->vhdr, (size_t)r - l->vhdr, &hdr);
        const double due = comet_delayline_admit_burst(&l->link, t, (size_t)r - l->vhdr, segs, hdr);
        if (due < 0)
            continue;
        l->bursts += segs > 1;
        const size_t k = (l->head + l->n) % l->cap;
        memcpy(l->buf + l->btail, scratch, (size_t)r);
        l->len[k] = (size_t)r;
        l->off[k] = l->btail;
        /* the ring's accounting wraps at bcap; the bytes run on past it */
        l->btail = (l->btail + (size_t)r) % l->bcap;
        l->bused += (size_t)r;
        l->due[k] = due;
        l->n++;
    }
}

/* Delivers every packet due by now; returns the next due time (or INFINITY). */
static double line_deliver(line *l)
{
    double t = now_ns();
    while (l->n > 0 && l->due[l->head] <= t) {
        const size_t k = l->head;
        if (write(l->out, l->buf + l->off[k], l->len[k]) < 0)
            l->write_err++;
        else
            l->bytes += l->len[k] - l->vhdr;
        const double late = t - l->due[k];
        l->late_sum += late;
        l->late_max = late > l->late_max ? late : l->late_max;
        l->late_n++;
        l->bused -= l->len[k];
        l->head = (l->head + 1) % l->cap;
        l->n--;
        t = now_ns();
    }
    return l->n > 0 ? l->due[l->head] : INFINITY;
}

static void line_report(const line *l, const char *name)
{
    fprintf(stderr,
        PROG ": %s: %llu packets (%llu offload bursts), %llu bytes delivered, %llu dropped (queue "
             "full), %llu malformed, %llu write errors; left %.1f us late on average, %.1f us at "
             "most\n",
        name, (unsigned long long)l->link.admitted, (unsigned long long)l->bursts,
        (unsigned long long)l->bytes, (unsigned long long)l->link.dropped,
        (unsigned long long)l->malformed, (unsigned long long)l->write_err,
        l->late_n ? 1e-3 * l->late_sum / (double)l->late_n : 0, 1e-3 * l->late_max);
}

/* Splits DEV@NETNS; returns 0 or -1 if DEV is empty or too long. */
static int split_end(char *spec, char **dev, char **ns)
{
    char *at = strchr(spec, '@');
    *dev = spec;
    *ns = NULL;
    if (at) {
        *at = 0;
        *ns = at + 1;
        if (!**ns)
            return -1;
    }
    return **dev && strlen(*dev) < IFNAMSIZ ? 0 : -1;
}

int main(int argc, char **argv)
{
    /* a line may outlive whoever started it: it holds none of the starter's
     * descriptors beyond stdin/stdout/stderr, or a reader waiting for the end
     * of a pipe it inherited would wait as long as the line runs */
    (void)close_range(3, ~0U, 0);
    /* static: still reachable from every early exit */
    static char *ends[2];
    char *ready = NULL;
    double bps = 0, delay = 0;
    long mtu = 1500, framing = 38, queue = 1000, prio = 10, burst = -1;
    double deadline_s = 0; /* -t; 0: none */
    int opt, watch_parent = 0;
    opterr = 0; /* our own one-line errors */
    while ((opt = getopt(argc, argv, "a:b:r:d:m:f:q:p:g:w:t:Ph")) != -1) {
        char *end = NULL;
        switch (opt) {
        case 'a':
        case 'b':
            free(ends[opt - 'a']);
            ends[opt - 'a'] = strdup(optarg); /* split below: argv stays as given */
            if (!ends[opt - 'a']) {
                fprintf(stderr, PROG ": out of memory\n");
                return 1;
            }
            break;
        case 'r':
            if (comet_delayline_parse_rate(optarg, &bps))
                return die("-r", "not a rate (e.g. 500mbit, 1gbit)", optarg);
            break;
        case 'd':
            if (comet_delayline_parse_time(optarg, &delay))
                return die("-d", "not a duration (e.g. 100us, 0.2ms, 0)", optarg);
            break;
        case 'm':
        case 'f':
        case 'q':
        case 'g':
        case 'p': {
            errno = 0;
            const long v = strtol(optarg, &end, 10);
            const long lo = opt == 'm' ? 68
                : opt == 'q'           ? 1
                                       : 0,
                       hi = opt == 'm' ? 65535
                : opt == 'f'           ? 1000
                : opt == 'q'           ? 1000000
                : opt == 'g'           ? 64
                                       : 99;
            if (errno || end == optarg || *end || v < lo || v > hi) {
                char flag[3] = { '-', (char)opt, 0 }, what[64];
                snprintf(what, sizeof what, "not an integer in %ld..%ld", lo, hi);
                return die(flag, what, optarg);
            }
            *(opt == 'm'         ? &mtu
                    : opt == 'f' ? &framing
                    : opt == 'q' ? &queue
                    : opt == 'g' ? &burst
                                 : &prio)
                = v;
            break;
        }
        case 'w':
            ready = optarg;
            break;
        case 't':
            errno = 0;
            deadline_s = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(deadline_s > 0) || deadline_s > 1e7)
                return die("-t", "not a deadline in seconds (> 0, e.g. 600)", optarg);
            break;
        case 'P':
            watch_parent = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default: {
            char flag[3] = { '-', (char)optopt, 0 };
            return die(flag,
                strchr("abrdmfqpgwt", optopt) ? "needs a value" : "unknown option (see -h)", NULL);
        }
        }
    }
    if (optind < argc)
        return die(argv[optind], "unexpected argument (see -h)", NULL);
    if (!ends[0] || !ends[1])
        return die(ends[0] ? "-b" : "-a", "missing: both ends are needed (see -h)", NULL);
    if (!(bps > 0))
        return die("-r", "missing: the wire's rate is needed (e.g. -r 500mbit)", NULL);
    char *dev[2], *ns[2];
    for (int e = 0; e < 2; e++)
        if (split_end(ends[e], &dev[e], &ns[e]))
            return die(e ? "-b" : "-a", "expected DEV@NETNS with DEV of 1-15 characters", NULL);

    if (burst < 0) {
        /* what the wire serialises in one moderation interval, >= 1 */
        const double segs = floor(250e-6 * bps / (8.0 * (double)(mtu + framing)));
        burst = segs < 1 ? 1 : segs > 64 ? 64 : (long)segs;
    }
    /* -P: the parent's death arrives as SIGTERM (checked below: it may
     * have died before the request) */
    const pid_t parent = getppid();
    if (watch_parent
        && (prctl(PR_SET_PDEATHSIG, SIGTERM, 0UL, 0UL, 0UL) != 0 || getppid() != parent)) {
        fprintf(stderr, PROG ": -P: the process that started it (pid %ld) is gone\n", (long)parent);
        free(ends[0]);
        free(ends[1]);
        return 1;
    }
    const double t_end = deadline_s > 0 ? now_ns() + 1e9 * deadline_s : INFINITY;
    const size_t vhdr = burst ? sizeof(struct virtio_net_hdr) : 0;
    char err[600];
    int fd[2] = { -1, -1 }, rc = 1;
    line l[2];
    memset(l, 0, sizeof l);
    unsigned char *scratch = malloc(LINE_READ_MAX);
    for (int e = 0; e < 2; e++)
        if ((fd[e] = tun_open(dev[e], ns[e], (int)mtu, (unsigned)burst, err, sizeof err)) < 0) {
            fprintf(stderr, PROG ": %s: %s\n", e ? "-b" : "-a", err);
            goto done;
        }
    for (int e = 0; e < 2; e++) {
        const int r = line_init(
            &l[e], fd[e], fd[1 - e], bps, delay, (unsigned)framing, (size_t)queue, (int)mtu, vhdr);
        if (r) {
            fprintf(stderr, PROG ": %s\n",
                r == -E2BIG ? "-d/-q: the packets in flight would need more than 1 GiB"
                            : "out of memory");
            goto done;
        }
    }
    if (!scratch) {
        fprintf(stderr, PROG ": out of memory\n");
        goto done;
    }
    /* timers to the microsecond: no slack, and ahead of busy-polling ranks */
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    if (prio > 0) {
        struct sched_param sp = { .sched_priority = (int)prio };
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
            fprintf(stderr, PROG ": -p: SCHED_FIFO not granted (%s): normal scheduling\n",
                strerror(errno));
    }
    /* the stopping signals are let in only inside ppoll: one arriving
     * between the test of stop and ppoll would otherwise wait for the next
     * packet, for ever on an idle line (and the namespaces with it) */
    sigset_t stopping, open_mask;
    sigemptyset(&stopping);
    sigaddset(&stopping, SIGINT);
    sigaddset(&stopping, SIGTERM);
    sigaddset(&stopping, SIGHUP);
    sigprocmask(SIG_BLOCK, &stopping, &open_mask);
    sigdelset(&open_mask, SIGINT);
    sigdelset(&open_mask, SIGTERM);
    sigdelset(&open_mask, SIGHUP);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (ready) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", ready);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0
            || rename(tmp, ready) != 0) {
            fprintf(stderr, PROG ": -w: cannot write %s: %s\n", ready, strerror(errno));
            goto done;
        }
    }
    rc = 0;
    while (!stop) {
        const double next = fmin(fmin(line_deliver(&l[0]), line_deliver(&l[1])), t_end);
        struct pollfd p[2] = { { fd[0], POLLIN, 0 }, { fd[1], POLLIN, 0 } };
        struct timespec to, *top = NULL;
        if (isfinite(next)) {
            double w = next - now_ns();
            w = w > 0 ? w : 0;
            to.tv_sec = (time_t)(w / 1e9);
            to.tv_nsec = (long)(w - 1e9 * (double)to.tv_sec);
            top = &to;
        }
        const int n = ppoll(p, 2, top, &open_mask);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        for (int e = 0; e < 2 && n > 0; e++) {
            if (p[e].revents & (POLLERR | POLLHUP | POLLNVAL)) {
                /* the device is gone (deleted with ip link del; deleting its
                 * namespace does not: the device holds it): stop, never spin */
                fprintf(stderr, PROG ": %s: the device went away\n", e ? "-b" : "-a");
                rc = 1;
                stop = 1;
            } else if (p[e].revents & POLLIN)
                line_read(&l[e], scratch, LINE_READ_MAX);
        }
        if (!stop && now_ns() >= t_end) {
            fprintf(stderr, PROG ": -t: its %g s deadline passed; stopping\n", deadline_s);
            rc = 1;
            break;
        }
    }
    if (watch_parent && getppid() != parent) {
        fprintf(stderr, PROG ": -P: the process that started it (pid %ld) ended; stopping\n",
            (long)parent);
        rc = 1;
    }
    line_report(&l[0], "a->b");
    line_report(&l[1], "b->a");
    /* the wire's own cost on the machine's CPUs (ranks share them) */
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        fprintf(stderr,
            PROG ": forwarding used %.2f s of CPU (user %.2f, system %.2f); %ld offload segments a "
                 "burst at most\n",
            (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec
                + (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec,
            (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec,
            (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec, burst);
done:
    for (int e = 0; e < 2; e++) {
        line_free(&l[e]);
        if (fd[e] >= 0)
            close(fd[e]);
    }
    free(scratch);
    free(ends[0]);
    free(ends[1]);
    return rc;
}
