# frozen_string_literal: true

# Seeds corpus_eventstream for fuzz/fuzz_eventstream.c: the recorded ConverseStream
# bodies (base64 in the fixtures), and a conversation framed here so that the
# fuzzer starts from messages whose CRCs hold.
#   ruby fuzz/seed_eventstream.rb spec/fixtures/recorded tmp/fuzz/corpus_eventstream
require "base64"
require "fileutils"
require "json"
require "zlib"

fixtures, corpus = ARGV
FileUtils.mkdir_p(corpus)

def frame(headers, payload)
  h = headers.map { |k, v| [k.bytesize].pack("C") + k + [7, v.bytesize].pack("Cn") + v }.join.b
  total = 16 + h.bytesize + payload.bytesize
  prelude = [total, h.bytesize].pack("NN")
  body = prelude + [Zlib.crc32(prelude)].pack("N") + h + payload.b
  body + [Zlib.crc32(body)].pack("N")
end

def event(type, payload)
  frame({ ":event-type" => type, ":content-type" => "application/json", ":message-type" => "event" },
        JSON.generate(payload))
end

bodies = Dir[File.join(fixtures.to_s, "*.json")].flat_map do |path|
  JSON.parse(File.read(path))["interactions"].filter_map do |i|
    r = i["response"]
    Base64.decode64(r["body"]) if r["encoding"] == "base64" && r["headers"].to_s.include?("eventstream")
  end
end
bodies << [event("messageStart", { role: "assistant", p: "abc" }),
           event("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hi" }, p: "ab" }),
           event("messageStop", { stopReason: "end_turn", p: "abcd" }),
           event("metadata", { usage: { inputTokens: 3, outputTokens: 1 } })].join
bodies << frame({ ":message-type" => "exception", ":exception-type" => "throttlingException" },
                '{"message":"slow down"}')
bodies.each_with_index do |body, i|
  # no slices (one byte at a time is slow on big bodies): byte 0 = 1 slice of 61 bytes
  File.binwrite(File.join(corpus, "seed_#{i}"), [1, 0, 61].pack("C3") + body)
end
