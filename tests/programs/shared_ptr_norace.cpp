// std::shared_ptr copies travel across threads: the reference count is
// updated atomically, and the last owner to let go (whichever thread it is)
// runs the destructor, which writes the object. The count's acquire-release
// decrements order every other owner's reads before that destructor: no
// race. The threads only read the pointee.
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

struct Data {
    long value = 41;
    ~Data() { value = -1; }
};

static long seen[4];

int main() {
    auto sp = std::make_shared<Data>();
    sp->value = 42;
    std::vector<std::shared_ptr<Data>> copies(4, sp);
    std::vector<std::thread> t;
    for (int i = 0; i < 4; i++)
        t.emplace_back([i](std::shared_ptr<Data> mine) {
            seen[i] = mine->value;
            std::shared_ptr<Data> copy = mine;
            seen[i] += copy->value;
        }, std::move(copies[i]));
    sp.reset(); // main is no longer an owner; a worker destroys the Data
    for (auto &x : t) x.join();
    std::printf("%ld %ld %ld %ld\n", seen[0], seen[1], seen[2], seen[3]);
    return 0;
}
