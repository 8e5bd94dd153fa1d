// Twin of delete_race.cpp: main joins the reading thread before deleting.
#include <cstdio>
#include <thread>

struct Account {
    long id = 7;
    long balance = 100;
};

static long seen;

int main() {
    Account *a = new Account;
    std::thread t([a] {
        seen = a->balance;
    });
    t.join();
    delete a;
    std::printf("%ld\n", seen);
    return 0;
}
