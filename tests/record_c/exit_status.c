/* Exits with status 7 after a little work in a thread. */
#include <pthread.h>
#include <stdlib.h>

int x;
void *work(void *arg) { x = 1; return arg; }
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, work, 0);
    pthread_join(t, 0);
    exit(6 + x);
}
