/* main passes the address of its stack variable to a thread, which writes it;
 * main writes it only after pthread_join: ordered, no race. */
#include <pthread.h>
#include <stdio.h>

static void *writer(void *arg) {
    int *p = arg;
    *p = 1;
    return NULL;
}

int main(void) {
    int x = 0;
    pthread_t t;
    pthread_create(&t, NULL, writer, &x);
    pthread_join(t, NULL);
    x = 2;
    printf("%d\n", x);
    return 0;
}
