// std::timed_mutex::try_lock_for (a steady-clock timeout, which libstdc++
// implements with pthread_mutex_clocklock) used correctly by two threads
// around a shared update: no race. gcc 12's ThreadSanitizer does not
// intercept pthread_mutex_clocklock, so it never sees these locks: it reports
// each unlock as "unlock of an unlocked mutex" and the protected updates as a
// race (false positives).
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

static std::timed_mutex m;
static long total;

int main() {
    using namespace std::chrono;
    std::thread a([] {
        for (int i = 0; i < 50; i++) {
            while (!m.try_lock_for(milliseconds(10))) {}
            total += 1;
            m.unlock();
        }
    });
    std::thread b([] {
        for (int i = 0; i < 50; i++) {
            while (!m.try_lock_for(milliseconds(10))) {}
            total += 2;
            m.unlock();
        }
    });
    a.join();
    b.join();
    std::printf("%ld\n", total);
    return 0;
}
