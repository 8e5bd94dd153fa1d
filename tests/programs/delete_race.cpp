// A thread reads a field of an object while main deletes the object without
// joining first. delete writes the whole block: unordered with the read, a
// race (heap-use-after-free in TSan's words when the delete comes first).
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
        seen = a->balance; // RACE
    });
    delete a; // RACE
    t.join();
    std::printf("%ld\n", seen);
    return 0;
}
