// Twin of std_mutex_norace.cpp: the second thread forgets the lock, so its
// increments are unordered with the first thread's locked ones: a race.
#include <cstdio>
#include <mutex>
#include <thread>

static long counter;
static std::mutex m;

int main() {
    std::thread a([] {
        for (int i = 0; i < 100; i++) {
            std::lock_guard<std::mutex> g(m);
            counter++; // RACE
        }
    });
    std::thread b([] {
        for (int i = 0; i < 100; i++) counter++; // RACE
    });
    a.join();
    b.join();
    std::printf("%ld\n", counter);
    return 0;
}
