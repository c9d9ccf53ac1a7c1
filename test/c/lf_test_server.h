/* The loopback listening socket the C tests' HTTP servers accept on, and its
 * stop: one copy for test_failover.c and test_hedge.c. */
#ifndef LF_TEST_SERVER_H
#define LF_TEST_SERVER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A socket listening on 127.0.0.1 at a port the kernel picks (*port). */
static int lf_test_listen(int *port)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&a, sizeof a);
    listen(fd, 8);
    getsockname(fd, (struct sockaddr *)&a, &len);
    *port = ntohs(a.sin_port);
    return fd;
}

/* Wakes the server thread blocked in accept on fd, and waits for it. */
static void lf_test_server_stop(int fd, pthread_t thread)
{
    shutdown(fd, SHUT_RDWR);
    close(fd);
    pthread_join(thread, NULL);
}

#endif
