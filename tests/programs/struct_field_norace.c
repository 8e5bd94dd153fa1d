/* Two threads write different fields and different bytes that share one
 * 8-byte word: s.a vs s.b, and the even vs odd bytes of s.bytes. The memory
 * locations are distinct (no byte is touched by both), so there is no race;
 * a detector that keys memory by word or by start address would report one. */
#include <pthread.h>
#include <stdio.h>

struct mixed { int a; int b; char bytes[8]; };
static volatile struct mixed s;

static void *even(void *arg) {
    s.a = 1;
    for (int i = 0; i < 8; i += 2) s.bytes[i] = 'e';
    return arg;
}

static void *odd(void *arg) {
    s.b = 2;
    for (int i = 1; i < 8; i += 2) s.bytes[i] = 'o';
    return arg;
}

int main(void) {
    pthread_t t1, t2;
    pthread_create(&t1, NULL, even, NULL);
    pthread_create(&t2, NULL, odd, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("%d %d %.8s\n", s.a, s.b, (const char *)s.bytes);
    return 0;
}
