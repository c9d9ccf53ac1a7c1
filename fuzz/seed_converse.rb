# frozen_string_literal: true

# Seeds corpus_converse for fuzz/fuzz_converse.c: the recorded Converse answers and
# error bodies (spec/fixtures/recorded/bedrock), and ConverseStreams written as that
# target reads them, one message a line ("TYPE PAYLOAD", "!TYPE PAYLOAD" for an
# exception).
#   ruby fuzz/seed_converse.rb spec/fixtures/recorded tmp/fuzz/corpus_converse
require "fileutils"
require "json"

fixtures, corpus = ARGV
FileUtils.mkdir_p(corpus)

bodies = Dir[File.join(fixtures.to_s, "bedrock", "*.json")].sort.flat_map do |path|
  JSON.parse(File.read(path))["interactions"].filter_map do |i|
    i["response"]["body"] if i["request"]["api"] == "bedrock"
  end
end

def line(type, payload)
  "#{type} #{JSON.generate(payload)}"
end

bodies << [line("messageStart", { role: "assistant", p: "abcdef" }),
           line("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Let me look." }, p: "ab" }),
           line("contentBlockStart", { contentBlockIndex: 1, start: { toolUse: { toolUseId: "tooluse_a", name: "weather" } } }),
           line("contentBlockDelta", { contentBlockIndex: 1, delta: { toolUse: { input: "{\"city\":" } }, p: "a" }),
           line("contentBlockDelta", { contentBlockIndex: 1, delta: { toolUse: { input: "\"Oslo\"}" } }, p: "abc" }),
           line("contentBlockStop", { contentBlockIndex: 1, p: "abcd" }),
           line("messageStop", { stopReason: "tool_use", p: "ab" }),
           line("metadata", { usage: { inputTokens: 5, outputTokens: 2, cacheReadInputTokens: 3,
                                       cacheWriteInputTokens: 1, totalTokens: 11 }, metrics: { latencyMs: 9 } })].join("\n")
bodies << [line("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Half" }, p: "a" }),
           line("!throttlingException", { message: "Too many requests, please wait before trying again." })].join("\n")
bodies.each_with_index { |body, i| File.binwrite(File.join(corpus, "seed_#{i}"), body) }
