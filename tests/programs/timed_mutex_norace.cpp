// std::timed_mutex taken with try_lock_until on the system clock (which
// libstdc++ implements with pthread_mutex_timedlock) and with try_lock, both
// retried until they succeed, by two threads around a shared update: no race.
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
            while (!m.try_lock_until(system_clock::now() + milliseconds(10))) {}
            total += 1;
            m.unlock();
        }
    });
    std::thread b([] {
        for (int i = 0; i < 50; i++) {
            while (!m.try_lock()) std::this_thread::yield();
            total += 2;
            m.unlock();
        }
    });
    a.join();
    b.join();
    std::printf("%ld\n", total);
    return 0;
}
