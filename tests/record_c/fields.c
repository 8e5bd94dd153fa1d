/* Two threads write different fields of one 8-byte cell (two ints, then
 * two shorts at offsets 2 and 4 of the next cell): no race, though a
 * format without byte masks would see one variable per cell. */
#include <pthread.h>
#include <stdio.h>

static struct {
    int a, b;
    short c[4];
} s;

static void *first(void *arg) {
    (void)arg;
    s.a = 1;
    s.c[1] = 2;
    return NULL;
}

static void *second(void *arg) {
    (void)arg;
    s.b = 3;
    s.c[2] = 4;
    return NULL;
}

int main(void) {
    pthread_t x, y;
    pthread_create(&x, NULL, first, NULL);
    pthread_create(&y, NULL, second, NULL);
    pthread_join(x, NULL);
    pthread_join(y, NULL);
    printf("%d %d %d %d\n", s.a, s.b, s.c[1], s.c[2]);
    return 0;
}
