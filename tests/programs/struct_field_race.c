/* One thread writes field a of a struct; the other copies the whole struct
 * (an 8-byte read covering a and b). The read overlaps the write: a race. */
#include <pthread.h>
#include <stdio.h>

struct pair { int a; int b; };
static volatile struct pair s;

static void *set_a(void *arg) {
    s.a = 1; // RACE
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, set_a, NULL);
    struct pair copy = s; // RACE
    pthread_join(t, NULL);
    printf("%d %d\n", copy.a, copy.b);
    return 0;
}
