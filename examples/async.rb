# frozen_string_literal: true

# Calls inside Async (or Falcon, async-job): each waits through the Fiber scheduler, so
# twenty slow answers on one thread take about as long as one, and a ticker fiber keeps
# ticking meanwhile. One of the twenty is stopped mid-stream, one runs into with_timeout.
#
#   bundle exec ruby examples/async.rb          # against a local FakeProvider
require "async"
require "llm_failover"
require "llm_failover/testing"

provider = LlmFailover::Testing::FakeProvider.start
# Every answer starts after 0.5 s, then streams four words.
provider.default = { chunks: ["One ", "answer ", "per ", "fiber."], delay_first_token: 0.5, chunk_delay: 0.05 }

LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: "fake-key", base_url: provider.base_url(:openai)
end

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

Async do |task|
  ticks = 0
  ticker = task.async do
    loop do
      task.sleep 0.1
      ticks += 1
    end
  end

  started = now
  LlmFailover.chat(model: "gpt-4o-mini", provider: :openai).ask("Alone") { |_chunk| nil }
  alone = now - started

  started = now
  ticks = 0
  replies = Array.new(20) do |i|
    task.async { LlmFailover.chat(model: "gpt-4o-mini", provider: :openai).ask("Question #{i}") { |_chunk| nil } }
  end.map(&:wait)
  elapsed = now - started
  puts "20 answers on one thread: #{replies.map(&:content).uniq.inspect}"
  puts format("in %.2f s (one alone: %.2f s); the ticker ticked %d times meanwhile", elapsed, alone, ticks)

  # task.stop ends a call at once: its connection is closed, the answer is marked failed.
  chat = LlmFailover.chat(model: "gpt-4o-mini", provider: :openai)
  first_word = Async::Condition.new
  streaming = task.async { chat.ask("Tell me a long story") { |chunk| first_word.signal(chunk.content) } }
  puts "stopped after #{first_word.wait.inspect}"
  streaming.stop
  puts "stored: #{chat.messages.map { |m| "#{m.role} (#{m.status})" }.join(', ')}"

  # with_timeout (and Timeout.timeout) end a call the same way.
  provider.enqueue({ delay_headers: 3 })
  begin
    task.with_timeout(0.2) { chat.complete }
  rescue Async::TimeoutError
    puts "with_timeout ended the silent call; stored: #{chat.messages.last.role} (#{chat.messages.last.status})"
  end
  ticker.stop
end

provider.stop
