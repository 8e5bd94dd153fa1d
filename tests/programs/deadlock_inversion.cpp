// Lock-order inversion with std::mutex and std::lock_guard: one thread locks
// a then b, the other b then a, after a sleep that makes the actual deadlock
// rare. TSan reports a lock-order-inversion; there is no data race.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

static std::mutex a, b;
static int total;

int main() {
    std::thread t1([] {
        std::lock_guard<std::mutex> ga(a); // DEADLOCK
        std::lock_guard<std::mutex> gb(b); // DEADLOCK
        total += 1;
    });
    std::thread t2([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        std::lock_guard<std::mutex> gb(b); // DEADLOCK
        std::lock_guard<std::mutex> ga(a); // DEADLOCK
        total += 2;
    });
    t1.join();
    t2.join();
    std::printf("%d\n", total);
    return 0;
}
