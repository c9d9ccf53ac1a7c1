/* A peer that times the failover hand-off from the server's side.
 *
 * It listens on two loopback ports: A answers every POST with a 503 and an
 * OpenAI error body, B with a canned chat-completions answer. For each
 * request on B that follows a response on A, it prints
 *
 *   D <microseconds>
 *
 * the time from the moment A's 503 was handed to the kernel to the moment the
 * first byte of B's request was read: the client's whole hand-off, plus two
 * loopback hops and this peer's own wake-up (an upper bound, and the same for
 * every client measured). One thread, poll(2), HTTP/1.1 keep-alive.
 *
 *   handoff_peer          prints "PORTS <a> <b>" and serves until SIGTERM */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lf_banned.h"

#define PEER_MAX_CONNS 64
#define PEER_BUF 65536

typedef struct peer_conn {
    int fd;
    int side; /* 0 = A (fails), 1 = B (answers) */
    char buf[PEER_BUF];
    size_t len;
    double first_byte_at;
} peer_conn;

static const char peer_fail_body[] =
    "{\"error\":{\"message\":\"The server is overloaded\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
static const char peer_ok_body[] =
    "{\"id\":\"chatcmpl-bench0003\",\"object\":\"chat.completion\",\"created\":1730000000,"
    "\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
    "\"content\":\"Hello from the backup\"},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":5,\"total_tokens\":14}}";

static double peer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int peer_listen(int *port)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 128) != 0) return -1;
    getsockname(fd, (struct sockaddr *)&a, &alen);
    *port = ntohs(a.sin_port);
    return fd;
}

/* Length of a complete request at the start of buf, or 0 if incomplete. */
static size_t peer_complete(const char *buf, size_t len)
{
    const char *end = NULL, *p;
    size_t head, clen = 0;
    for (p = buf; p + 3 < buf + len; p++) {
        if (p[0] == '\r' && p[1] == '\n' && p[2] == '\r' && p[3] == '\n') {
            end = p + 4;
            break;
        }
    }
    if (!end) return 0;
    head = (size_t)(end - buf);
    for (p = buf; p < end; p++) {
        if ((p == buf || p[-1] == '\n') && (size_t)(end - p) > 15 && strncasecmp(p, "content-length:", 15) == 0) {
            clen = (size_t)strtoul(p + 15, NULL, 10);
            break;
        }
    }
    return len >= head + clen ? head + clen : 0;
}

static int peer_send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int peer_respond(int fd, int side)
{
    char head[256];
    const char *body = side ? peer_ok_body : peer_fail_body;
    size_t blen = strlen(body);
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: keep-alive\r\n\r\n",
                     side ? "200 OK" : "503 Service Unavailable", blen);
    char out[1024];
    if (n < 0 || (size_t)n + blen > sizeof out) return -1;
    memcpy(out, head, (size_t)n);
    memcpy(out + n, body, blen);
    return peer_send_all(fd, out, (size_t)n + blen);
}

int main(void)
{
    static peer_conn conns[PEER_MAX_CONNS];
    struct pollfd pfd[PEER_MAX_CONNS + 2];
    int ports[2], lfd[2], n_conns = 0, i;
    double a_sent_at = 0;

    lfd[0] = peer_listen(&ports[0]);
    lfd[1] = peer_listen(&ports[1]);
    if (lfd[0] < 0 || lfd[1] < 0) {
        perror("handoff_peer: listen");
        return 1;
    }
    printf("PORTS %d %d\n", ports[0], ports[1]);
    fflush(stdout);

    for (;;) {
        int n = 0;
        pfd[n].fd = lfd[0];
        pfd[n++].events = POLLIN;
        pfd[n].fd = lfd[1];
        pfd[n++].events = POLLIN;
        for (i = 0; i < n_conns; i++) {
            pfd[n].fd = conns[i].fd;
            pfd[n++].events = POLLIN;
        }
        if (poll(pfd, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            return 1;
        }
        for (i = 0; i < 2; i++) {
            if ((pfd[i].revents & POLLIN) && n_conns < PEER_MAX_CONNS) {
                int one = 1, fd = accept(lfd[i], NULL, NULL);
                if (fd < 0) continue;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                memset(&conns[n_conns], 0, sizeof(conns[n_conns]));
                conns[n_conns].fd = fd;
                conns[n_conns].side = i;
                n_conns++;
            }
        }
        for (i = 2; i < n; i++) {
            peer_conn *c;
            ssize_t r;
            size_t req;
            int k;
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            for (k = 0; k < n_conns && conns[k].fd != pfd[i].fd; k++) {}
            if (k == n_conns) continue;
            c = &conns[k];
            r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
            if (r <= 0) {
                close(c->fd);
                conns[k] = conns[n_conns - 1];
                n_conns--;
                continue;
            }
            if (c->len == 0) c->first_byte_at = peer_now();
            c->len += (size_t)r;
            while ((req = peer_complete(c->buf, c->len)) > 0) {
                if (c->side == 1 && a_sent_at > 0) {
                    printf("D %.3f\n", (c->first_byte_at - a_sent_at) * 1e6);
                    fflush(stdout);
                    a_sent_at = 0;
                }
                if (peer_respond(c->fd, c->side) != 0) break;
                if (c->side == 0) a_sent_at = peer_now();
                memmove(c->buf, c->buf + req, c->len - req);
                c->len -= req;
                if (c->len) c->first_byte_at = peer_now();
            }
        }
    }
}
