// thread_local variables: each thread has its own copy (an int and an object
// with a constructor, so a dynamically initialized one too), so the threads
// updating "the same" variable touch different memory: no race.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

thread_local int calls;
thread_local std::string name("worker");

static int results[4];

int main() {
    std::vector<std::thread> t;
    for (int i = 0; i < 4; i++)
        t.emplace_back([i] {
            for (int k = 0; k < 1000; k++) calls++;
            name += std::to_string(i);
            results[i] = calls + (int)name.size();
        });
    for (auto &x : t) x.join();
    std::printf("%d %d %d %d\n", results[0], results[1], results[2], results[3]);
    return 0;
}
