// Two std::threads increment a counter under std::lock_guard<std::mutex>:
// no race.
#include <cstdio>
#include <mutex>
#include <thread>

static long counter;
static std::mutex m;

int main() {
    auto work = [] {
        for (int i = 0; i < 100; i++) {
            std::lock_guard<std::mutex> g(m);
            counter++;
        }
    };
    std::thread a(work), b(work);
    a.join();
    b.join();
    std::printf("%ld\n", counter);
    return 0;
}
