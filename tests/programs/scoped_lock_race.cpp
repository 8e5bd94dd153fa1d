// Twin of scoped_lock_norace.cpp: the second thread takes the wrong lock (an
// audit mutex that the first thread never takes) around its transfer, so
// both of its updates race with the first thread's.
#include <cstdio>
#include <mutex>
#include <thread>

struct Account {
    std::mutex m;
    long balance = 100;
};

static Account x, y;
static std::mutex audit;

int main() {
    std::thread a([] {
        for (int i = 0; i < 50; i++) {
            std::scoped_lock g(x.m, y.m);
            x.balance -= 1; // RACE
            y.balance += 1; // RACE
        }
    });
    std::thread b([] {
        for (int i = 0; i < 50; i++) {
            std::unique_lock<std::mutex> l(audit);
            y.balance -= 2; // RACE
            x.balance += 2; // RACE
        }
    });
    a.join();
    b.join();
    std::printf("%ld %ld\n", x.balance, y.balance);
    return 0;
}
