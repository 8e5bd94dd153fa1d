/* The PolarCoord shape of the CP paper (Figure 2): two threads bump `count`
 * outside critical sections that only read shared data. Thread 2 waits,
 * sleeping, until thread 1 has left its critical section; the wait uses a
 * flag neither ThreadSanitizer nor cprace sees (no_sanitize_thread), so in
 * the observed run happens-before orders the increments through the lock. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

double radius = 1.0, angle = 0.5;
long count;
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int left_cs;

__attribute__((no_sanitize_thread)) static void signal_left(void) { left_cs = 1; }
__attribute__((no_sanitize_thread)) static void wait_left(void) {
    while (!left_cs) usleep(1000);
}

void *get_radius(void *out) {
    count++; /* INCREMENT-1 */
    pthread_mutex_lock(&lock);
    *(double *)out = radius;
    pthread_mutex_unlock(&lock);
    signal_left();
    return 0;
}

void *get_angle(void *out) {
    wait_left();
    pthread_mutex_lock(&lock);
    *(double *)out = angle;
    pthread_mutex_unlock(&lock);
    count++; /* INCREMENT-2 */
    return 0;
}

int main(void) {
    pthread_t t1, t2;
    double r, a;
    pthread_create(&t1, 0, get_radius, &r);
    pthread_create(&t2, 0, get_angle, &a);
    pthread_join(t1, 0);
    pthread_join(t2, 0);
    printf("count=%ld r=%g a=%g\n", count, r, a);
    return 0;
}
