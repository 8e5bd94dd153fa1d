// std::scoped_lock over two mutexes (deadlock-free acquisition) and
// std::unique_lock with std::defer_lock + std::lock: transfers between two
// accounts, each guarded by its own mutex; every access holds the right
// mutex: no race.
#include <cstdio>
#include <mutex>
#include <thread>

struct Account {
    std::mutex m;
    long balance = 100;
};

static Account x, y;

int main() {
    std::thread a([] {
        for (int i = 0; i < 50; i++) {
            std::scoped_lock g(x.m, y.m);
            x.balance -= 1;
            y.balance += 1;
        }
    });
    std::thread b([] {
        for (int i = 0; i < 50; i++) {
            std::unique_lock<std::mutex> ly(y.m, std::defer_lock), lx(x.m, std::defer_lock);
            std::lock(ly, lx);
            y.balance -= 2;
            x.balance += 2;
        }
    });
    a.join();
    b.join();
    std::printf("%ld %ld\n", x.balance, y.balance);
    return 0;
}
