/* The delay line's link: one direction of a wire of a given rate followed by
 * a fixed propagation delay, with a bounded FIFO in front of the wire (a
 * NIC's transmit queue). Pure arithmetic on timestamps, no I/O, so the
 * program (comet-delayline.c) and its property test share it. */
#ifndef COMET_DELAYLINE_H
#define COMET_DELAYLINE_H

#include <stddef.h>
#include <stdint.h>

/** One direction of an emulated link. Times in ns on any monotonic clock. */
typedef struct comet_delayline_dir {
    double ns_per_byte; /**< serialisation time of one wire byte (8e9 / rate in bit/s) */
    double delay_ns; /**< one-way propagation delay added after serialisation */
    unsigned overhead; /**< framing bytes the wire carries per packet beside the IP packet */
    size_t queue_pkts; /**< packets that may wait or be on the wire; more are dropped */
    double wire_free; /**< when the wire finishes the last admitted packet */
    double *ser_end; /**< ring: serialisation end of each packet not yet serialised */
    size_t head, n;
    uint64_t admitted, dropped;
} comet_delayline_dir;

/**
 * @brief Sets up one direction: rate in bit/s (> 0), delay in ns (>= 0),
 * per-packet framing, and the queue limit in packets (>= 1).
 * @return 0, or -ENOMEM / -EINVAL.
 */
int comet_delayline_dir_init(
    comet_delayline_dir *d, double rate_bps, double delay_ns, unsigned overhead, size_t queue_pkts);

/** @brief Frees what comet_delayline_dir_init allocated. */
void comet_delayline_dir_free(comet_delayline_dir *d);

/**
 * @brief Admits a packet of len bytes arriving at now_ns.
 *
 * The packet waits for the wire (FIFO), is serialised at the rate
 * ((len + overhead) bytes) and arrives delay_ns after its last bit left.
 * A packet finding queue_pkts packets not yet fully serialised is dropped
 * (tail drop, as a full transmit queue).
 * @return the delivery time in ns, or a negative value if dropped.
 */
double comet_delayline_admit(comet_delayline_dir *d, double now_ns, size_t len);

/**
 * @brief Admits a burst of segs back-to-back segments arriving at now_ns:
 * one TCP segmentation-offload super-packet of len bytes whose first hdr
 * bytes (IP and TCP headers) every segment carries.
 *
 * The wire carries len + (segs - 1) * hdr bytes of packets and segs times
 * the framing, as segs packets sent one after another (what a NIC's TSO puts
 * on the wire). Each segment occupies the queue as a packet; a burst that
 * does not fit in what the queue has left is dropped whole. segs = 1 is
 * comet_delayline_admit().
 * @return the delivery time of the burst's last segment in ns, or a
 * negative value if dropped.
 */
double comet_delayline_admit_burst(
    comet_delayline_dir *d, double now_ns, size_t len, size_t segs, size_t hdr);

/**
 * @brief Parses a duration as tc writes it ("100us", "0.2ms", "1s", "250ns";
 * a bare number is microseconds, as in tc).
 * @return 0 and *ns, or -EINVAL.
 */
int comet_delayline_parse_time(const char *s, double *ns);

/**
 * @brief Parses a rate as tc writes it ("500mbit", "1gbit", "100kbit",
 * "12500kbps" in bytes, a bare number in bit/s).
 * @return 0 and *bps (bit/s, > 0), or -EINVAL.
 */
int comet_delayline_parse_rate(const char *s, double *bps);

#endif
