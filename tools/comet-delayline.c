/* comet-delayline: a link with propagation delay between two network
 * namespaces, in user space (netem is not built into every kernel; TUN is).
 * It creates one TUN device in each namespace and forwards every IP packet
 * one reads to the other after a wire of the given rate (FIFO, bounded
 * queue, per-packet framing) and a fixed one-way delay (delayline.h), so the
 * two namespaces see a real round-trip time and a real bandwidth-delay
 * product. scripts/netns-veth.sh runs it (COMET_NETNS_DELAY). */
#include "delayline.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
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
      "  -w FILE        write FILE (atomically) once both devices exist\n"
      "  -h             this help\n";

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

/* Creates TUN device dev in namespace ns (NULL: ours) with the given MTU;
 * returns its non-blocking fd or -1 with err set. */
static int tun_open(const char *dev, const char *ns, int mtu, char *err, size_t errlen)
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
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", dev);
    if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) {
        snprintf(err, errlen, "cannot create TUN device %s: %s", dev, strerror(errno));
        goto fail;
    }
    /* the MTU bounds what one read returns: the packet slots are that long */
    sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifr.ifr_mtu = mtu;
    if (sock < 0 || ioctl(sock, SIOCSIFMTU, &ifr) != 0) {
        snprintf(err, errlen, "cannot set MTU %d on %s: %s", mtu, dev, strerror(errno));
        goto fail;
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

/* One direction: the link arithmetic plus a ring of packets in flight. */
typedef struct line {
    comet_delayline_dir link;
    int in, out; /* read from in, write to out */
    size_t slot, cap, head, n; /* slot bytes (MTU), ring capacity */
    unsigned char *buf; /* cap slots */
    double *due; /* delivery time of each slot */
    size_t *len;
    uint64_t bytes, late_n, oversize, write_err;
    double late_sum, late_max;
} line;

static int line_init(
    line *l, int in, int out, double bps, double delay, unsigned framing, size_t queue, int mtu)
{
    memset(l, 0, sizeof *l);
    l->in = in;
    l->out = out;
    int rc = comet_delayline_dir_init(&l->link, bps, delay, framing, queue);
    if (rc)
        return rc;
    /* in flight: the queue, plus what the delay holds (packets of at least
     * an IPv4 header, one every serialisation time), plus one */
    const double min_ser = (20.0 + framing) * l->link.ns_per_byte;
    const double held = ceil(delay / min_ser) + 2;
    if (held > 1e7)
        return -E2BIG;
    l->slot = (size_t)mtu;
    l->cap = queue + (size_t)held;
    if ((double)l->cap * (double)l->slot > (double)(1u << 30))
        return -E2BIG;
    l->buf = malloc(l->cap * l->slot);
    l->due = malloc(l->cap * sizeof(double));
    l->len = malloc(l->cap * sizeof(size_t));
    return l->buf && l->due && l->len ? 0 : -ENOMEM;
}

static void line_free(line *l)
{
    comet_delayline_dir_free(&l->link);
    free(l->buf);
    free(l->due);
    free(l->len);
}

/* Reads every packet waiting on l->in and schedules it. */
static void line_read(line *l, unsigned char *scratch, size_t scratch_len)
{
    for (;;) {
        const ssize_t r = read(l->in, scratch, scratch_len);
        if (r <= 0)
            return; /* EAGAIN: drained (errors: the device went away; stop decides) */
        const double t = now_ns();
        if ((size_t)r > l->slot) {
            l->oversize++;
            continue;
        }
        if (l->n == l->cap) { /* cannot happen within the bound line_init sized */
            l->link.dropped++;
            continue;
        }
        const double due = comet_delayline_admit(&l->link, t, (size_t)r);
        if (due < 0)
            continue;
        const size_t k = (l->head + l->n) % l->cap;
        memcpy(l->buf + k * l->slot, scratch, (size_t)r);
        l->len[k] = (size_t)r;
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
        if (write(l->out, l->buf + k * l->slot, l->len[k]) < 0)
            l->write_err++;
        else
            l->bytes += l->len[k];
        const double late = t - l->due[k];
        l->late_sum += late;
        l->late_max = late > l->late_max ? late : l->late_max;
        l->late_n++;
        l->head = (l->head + 1) % l->cap;
        l->n--;
        t = now_ns();
    }
    return l->n > 0 ? l->due[l->head] : INFINITY;
}

static void line_report(const line *l, const char *name)
{
    fprintf(stderr,
        PROG ": %s: %llu packets, %llu bytes delivered, %llu dropped (queue full), %llu over "
             "the MTU, %llu write errors; left %.1f us late on average, %.1f us at most\n",
        name, (unsigned long long)l->link.admitted, (unsigned long long)l->bytes,
        (unsigned long long)l->link.dropped, (unsigned long long)l->oversize,
        (unsigned long long)l->write_err, l->late_n ? 1e-3 * l->late_sum / (double)l->late_n : 0,
        1e-3 * l->late_max);
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
    /* static: still reachable from every early exit */
    static char *ends[2];
    char *ready = NULL;
    double bps = 0, delay = 0;
    long mtu = 1500, framing = 38, queue = 1000, prio = 10;
    int opt;
    opterr = 0; /* our own one-line errors */
    while ((opt = getopt(argc, argv, "a:b:r:d:m:f:q:p:w:h")) != -1) {
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
        case 'p': {
            errno = 0;
            const long v = strtol(optarg, &end, 10);
            const long lo = opt == 'm' ? 68
                : opt == 'q'           ? 1
                                       : 0,
                       hi = opt == 'm' ? 65535
                : opt == 'f'           ? 1000
                : opt == 'q'           ? 1000000
                                       : 99;
            if (errno || end == optarg || *end || v < lo || v > hi) {
                char flag[3] = { '-', (char)opt, 0 }, what[64];
                snprintf(what, sizeof what, "not an integer in %ld..%ld", lo, hi);
                return die(flag, what, optarg);
            }
            *(opt == 'm' ? &mtu : opt == 'f' ? &framing : opt == 'q' ? &queue : &prio) = v;
            break;
        }
        case 'w':
            ready = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default: {
            char flag[3] = { '-', (char)optopt, 0 };
            return die(flag,
                strchr("abrdmfqpw", optopt) ? "needs a value" : "unknown option (see -h)", NULL);
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

    char err[600];
    int fd[2] = { -1, -1 }, rc = 1;
    line l[2];
    memset(l, 0, sizeof l);
    unsigned char *scratch = malloc(65536);
    for (int e = 0; e < 2; e++)
        if ((fd[e] = tun_open(dev[e], ns[e], (int)mtu, err, sizeof err)) < 0) {
            fprintf(stderr, PROG ": %s: %s\n", e ? "-b" : "-a", err);
            goto done;
        }
    for (int e = 0; e < 2; e++) {
        const int r = line_init(
            &l[e], fd[e], fd[1 - e], bps, delay, (unsigned)framing, (size_t)queue, (int)mtu);
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
        const double next = fmin(line_deliver(&l[0]), line_deliver(&l[1]));
        struct pollfd p[2] = { { fd[0], POLLIN, 0 }, { fd[1], POLLIN, 0 } };
        struct timespec to, *top = NULL;
        if (isfinite(next)) {
            double w = next - now_ns();
            w = w > 0 ? w : 0;
            to.tv_sec = (time_t)(w / 1e9);
            to.tv_nsec = (long)(w - 1e9 * (double)to.tv_sec);
            top = &to;
        }
        const int n = ppoll(p, 2, top, NULL);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        for (int e = 0; e < 2 && n > 0; e++) {
            if (p[e].revents & (POLLERR | POLLHUP | POLLNVAL)) {
                /* the device is gone (its namespace deleted): stop, never spin */
                fprintf(stderr, PROG ": %s: the device went away\n", e ? "-b" : "-a");
                rc = 1;
                stop = 1;
            } else if (p[e].revents & POLLIN)
                line_read(&l[e], scratch, 65536);
        }
    }
    line_report(&l[0], "a->b");
    line_report(&l[1], "b->a");
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
