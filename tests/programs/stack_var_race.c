/* main passes the address of its stack variable to a thread, which writes it;
 * main writes it too before joining: the two writes are unordered. */
#include <pthread.h>
#include <stdio.h>

static void *writer(void *arg) {
    int *p = arg;
    *p = 1; // RACE
    return NULL;
}

int main(void) {
    int x = 0;
    pthread_t t;
    pthread_create(&t, NULL, writer, &x);
    x = 2; // RACE
    pthread_join(t, NULL);
    printf("%d\n", x);
    return 0;
}
