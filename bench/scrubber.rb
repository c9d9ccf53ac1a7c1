# frozen_string_literal: true

# What the default Scrubber costs: `bundle exec ruby bench/scrubber.rb` (ROUNDS rounds,
# default 15). Prints, for 1 MB prompts of four kinds:
#
#   json ms     CPU time of JSON.generate of a request with the prompt (json 2.10+ copies a String
#               known to be valid UTF-8 in SIMD-sized steps; the C core's own writer,
#               lf_json_put_string, also goes word by word)
#   scrub ms    CPU time of Scrubber.default.scrub of the prompt, and its cost per KB
#   ratio       scrub / json (the fastest of ROUNDS runs each); the target is 2
#   found, hits distinct values replaced, and placeholders in the scrubbed text
#
# Prompts: prose (the gem's README and bench/README, with a card, an IBAN, an SSN, two
# keys, an e-mail address and a phone number every 100 KB), the same with the e-mail
# and phone rules on, hit-dense prose (those values after every KB of it: 7 hits a KB),
# a table of numbers (a CSV of orders: digits in every field, the worst case for the
# digit rules), and the prose in one line. Nothing is asserted.

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "json"
require "llm_failover"

ROUNDS = Integer(ENV.fetch("ROUNDS", "15"))
MB = 1_000_000

# The fastest of ROUNDS runs of the block in CPU time of this thread (a machine
# shared with other work stretches wall time, the longer run the more), each after a
# GC so that none pays for another's garbage.
def fastest
  Array.new(ROUNDS) do
    GC.start
    t = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
    yield
    Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - t
  end.min
end

SECRETS = "\nPay with 4111 1111 1111 1111 to DE89 3704 0044 0532 0130 00; SSN 123-45-6789; " \
          "key sk-proj-4fJx9TqLm2VbN8cZ1rWs7YhK3pDe6GaU, AKIAIOSFODNN7EXAMPLE; mail jane@example.com, " \
          "call +1 555-123-4567.\n"

def readmes
  root = File.expand_path("..", __dir__)
  File.read(File.join(root, "README.md")) + File.read(File.join(root, "bench/README.md"))
end

def prose
  text = readmes
  out = +""
  out << text << (out.bytesize % 100_000 < text.bytesize ? SECRETS : "") while out.bytesize < MB
  out
end

def dense
  text = readmes
  out = +""
  at = 0
  while out.bytesize < MB
    out << text.byteslice(at % (text.bytesize - 1000), 1000).scrub << SECRETS
    at += 1000
  end
  out
end

def table
  rng = Random.new(1)
  out = +"date,order,customer,amount,status\n"
  while out.bytesize < MB
    out << format("2026-%02d-%02d,%d,customer %d,%d.%02d,shipped\n", rng.rand(1..12), rng.rand(1..28),
                  rng.rand(100_000..999_999), rng.rand(1000), rng.rand(1..9999), rng.rand(100))
  end
  out
end

prompts = { "prose" => [prose, LlmFailover::Scrubber.default],
            "prose, e-mail and phone on" => [prose, LlmFailover::Scrubber.default(email: true, phone: true)],
            "hit-dense prose" => [dense, LlmFailover::Scrubber.default],
            "table of numbers" => [table, LlmFailover::Scrubber.default],
            "prose in one line" => [prose.tr("\n\"\\", "   "), LlmFailover::Scrubber.default] }

# json's first large encodings in a process are some 20 times slower (6 to 7 ms for the
# prose here, the same String encoded later in 0.3 ms): the figures are the warm ones.
JSON.generate([table])

puts format("%-28s %8s %9s %11s %7s %6s %6s", "prompt (1 MB)", "json ms", "scrub ms", "scrub us/KB", "ratio", "found", "hits")
prompts.each do |name, (text, scrubber)|
  text = text.dup.tap(&:valid_encoding?) # as Ruby has it once anything read it
  json = fastest { JSON.generate([{ "role" => "user", "content" => text }]) }
  scrub = fastest { scrubber.scrub(text) }
  out, mapping = scrubber.scrub(text)
  hits = out.scan(/\[[A-Z_]+_\d+\]/).size
  puts format("%-28s %8.2f %9.2f %11.2f %7.1f %6d %6d", name, json * 1000, scrub * 1000,
              scrub * 1e6 / (text.bytesize / 1000.0), scrub / json, mapping.size, hits)
end
