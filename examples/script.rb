# frozen_string_literal: true

# A plain Ruby script: a chat with a backup, a follow-up question, an error the backup
# must not hide, and what the gem recorded along the way.
#
#   bundle exec ruby examples/script.rb                        # two local FakeProviders
#   LLM_FAILOVER_LIVE=1 bundle exec ruby examples/script.rb    # the real APIs, from
#                                                              # OPENAI_API_KEY and ANTHROPIC_API_KEY
require "llm_failover"

live = ENV["LLM_FAILOVER_LIVE"] == "1"
unless live
  # Stand-ins for OpenAI and Anthropic on loopback, scripted request by request.
  require "llm_failover/testing"
  openai = LlmFailover::Testing::FakeProvider.start
  anthropic = LlmFailover::Testing::FakeProvider.start
  openai.enqueue({ text: "Paris." },
                 { error: :insufficient_quota }, # the OpenAI account runs dry: fail over at once
                 { error: :unauthorized })       # then someone rotates the key
  anthropic.enqueue({ text: "Rome." })
end

LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: live ? ENV.fetch("OPENAI_API_KEY") : "fake-key",
                      base_url: (openai.base_url(:openai) unless live)
  c.provider :anthropic, api: :anthropic, api_key: live ? ENV.fetch("ANTHROPIC_API_KEY") : "fake-key",
                         base_url: (anthropic.base_url(:anthropic) unless live)
  # One record per HTTP attempt, failed ones included.
  c.usage_log = lambda do |a|
    outcome = a.success ? "ok" : "#{a.error_class} #{a.http_status}"
    target = LlmFailover::Target.label(a.provider, a.model)
    puts "   [attempt #{a.attempt}] #{target}: #{outcome}, #{a.latency_ms.round} ms"
  end
end

chat = LlmFailover.chat(model: "gpt-4o", provider: :openai,
                        backup_model: "claude-sonnet-4-6", backup_provider: :anthropic,
                        feature: "capitals")
chat.with_instructions("Answer with the city name only.")

["What is the capital of France?", "And of Italy?"].each do |question|
  puts "Q: #{question}"
  reply = chat.ask(question) # no block: the answer arrives whole
  puts "A: #{reply.content}"
  by = LlmFailover::Target.label(reply.provider, reply.model)
  puts "   answered by #{by} after #{reply.attempts.size} attempt(s), " \
       "failover: #{reply.failover? ? 'yes' : 'no'}, tokens #{reply.input_tokens} in / #{reply.output_tokens} out"
end

# A wrong key raises at once: a working backup must never hide it.
begin
  puts "Q: And of Spain?"
  chat.ask("And of Spain?")
rescue LlmFailover::Error => e
  from = LlmFailover::Target.label(e.provider, e.model)
  puts "error: #{e.class} (#{e.retryable? ? 'retryable' : 'not retryable'}) from #{from} " \
       "after #{e.attempts.size} attempt(s)"
end

puts "The chat holds #{chat.messages.size} messages:"
chat.messages.each do |m|
  by = m.respond_to?(:model) && m.model ? " (#{LlmFailover::Target.label(m.provider, m.model)}, #{m.status})" : ""
  puts "  #{m.role.to_s.ljust(9)} #{m.content.inspect}#{by}"
end

unless live
  puts "openai saw #{openai.request_count} requests, anthropic #{anthropic.request_count}"
  [openai, anthropic].each(&:stop)
end
