/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A host-side client of the firmware's mode=udpecho for functional tests:
 * a thread sends numbered datagrams ("c=N") at a steady rate to one or more
 * loopback ports (a guest's hostfwd port; after a switchover, the
 * destination's, as a service address moves), another records when each echo
 * ("seq=M c=N") came back, on the wall clock QMP events carry.
 */
#ifndef UDPTEST_H
#define UDPTEST_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct UdpEcho UdpEcho;

/* A UDP port on 127.0.0.1 that was free a moment ago. */
int udptest_free_port(void);

/*
 * Single datagrams to and from 127.0.0.1, for tests that talk to a guest
 * themselves; each fails the test on a socket error. udptest_socket: bound
 * to 127.0.0.1:@bind_port (0: any free port).
 */
int udptest_socket(int bind_port);
/* Sends @buf[0..@len) to 127.0.0.1:@port, all of it. */
void udptest_send(int fd, int port, const char *buf, size_t len);
/*
 * One datagram within @timeout_ms, NUL-terminated in @buf (at most
 * @size - 1 bytes) with its sender in *@from: its length, or -1 if none came.
 */
ssize_t udptest_recv(int fd, char *buf, size_t size, int timeout_ms, struct sockaddr_in *from);

/* Starts sending @rate datagrams per second to each of @ports[0..@nports). */
UdpEcho *udp_echo_start(const int *ports, int nports, int rate);
/* From the next datagram on, sends to @ports[0..@nports) instead. */
void udp_echo_retarget(UdpEcho *u, const int *ports, int nports);
/* Stops both threads; the records stay readable until udp_echo_free(). */
void udp_echo_stop(UdpEcho *u);
void udp_echo_free(UdpEcho *u);

/* Echoes received so far (one per datagram number, duplicates not counted). */
uint64_t udp_echo_count(UdpEcho *u);
/* Waits until @count echoes came back; fails the test after @timeout_s. */
void udp_echo_wait(UdpEcho *u, uint64_t count, int timeout_s);
/* Wall-clock microseconds (g_get_real_time()) now. */
int64_t udptest_now_us(void);

typedef struct UdpEchoReport {
    uint64_t sent;              /* datagrams sent in [from, to - settle] */
    uint64_t lost;              /* of those, never echoed */
    uint64_t lost_outside;      /* lost and sent outside [win_from - rtt_max, win_to] */
    int64_t rtt_max_us;
    int64_t max_gap_us;         /* longest time without a new echo, within [from, to] */
    uint64_t highest_seq;       /* the largest "seq=M" seen in an echo */
    uint64_t first_seq_after;   /* the first seq of an echo received after @win_to (0: none) */
} UdpEchoReport;

/*
 * Over the datagrams sent from @from_us to @to_us minus @settle_us (wall
 * clock): how many never came back and how many of those were sent outside
 * the window [@win_from_us, @win_to_us] (a migration's STOP to RESUME).
 */
void udp_echo_report(UdpEcho *u, int64_t from_us, int64_t to_us, int64_t settle_us,
                     int64_t win_from_us, int64_t win_to_us, UdpEchoReport *r);

#endif
