// A thread_local is private only as long as its address stays private:
// main hands the address of its own copy to another thread, and both write
// it with no synchronization after the handoff: a race.
#include <cstdio>
#include <thread>

thread_local int slot;

int main() {
    int *mine = &slot;
    std::thread t([mine] {
        *mine = 1; // RACE
    });
    slot = 2; // RACE
    t.join();
    std::printf("%d\n", slot);
    return 0;
}
