# frozen_string_literal: true

# A chat stored with ActiveRecord, in a SQLite file, answered by two local
# FakeProviders, so it runs without keys or network:
#
#   bundle exec ruby examples/active_record_chat.rb
#
# It shows the rows the way another process sees them: the user row written once,
# the assistant row emptied when the primary breaks mid-answer and filled by the
# backup, a failed turn answered again by #complete on a freshly loaded record, the
# attempt log, and the report over it.
$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "tmpdir"
require "llm_failover/active_record"
require "llm_failover/testing"
require "llm_failover/report"

dir = Dir.mktmpdir("llm_failover_example")
ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: File.join(dir, "chat.sqlite3"))
LlmFailover::ActiveRecord.create_tables!

class Chat < ActiveRecord::Base
  acts_as_llm_chat
end

class Message < ActiveRecord::Base
  acts_as_llm_message
end

primary = LlmFailover::Testing::FakeProvider.start
backup = LlmFailover::Testing::FakeProvider.start
LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: "sk-example-not-a-real-key", base_url: primary.base_url(:openai)
  c.provider :anthropic, api: :anthropic, api_key: "sk-ant-example-not-a-real-key",
                         base_url: backup.base_url(:anthropic)
  c.max_retries = 0
  c.usage_log = LlmFailover::ActiveRecord::AttemptLog.new
end

def show(chat)
  Message.where(chat_id: chat.id).order(:id).each do |m|
    by = LlmFailover::Target.label(m.provider, m.model) if m.model
    puts format("  #%-3d %-9s %-9s %-28s %s", m.id, m.role, m.status, by, m.content.inspect)
  end
end

chat = Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                    backup_provider: "anthropic", feature: "example")

puts "1. The primary breaks after two words; the backup answers from scratch:"
primary.enqueue({ chunks: ["Paris ", "is ", "the ", "capital."], cut_after: 2 })
backup.enqueue({ chunks: ["The ", "capital ", "is ", "Paris."] })
print "  streamed: "
reply = chat.ask("What is the capital of France?") do |chunk|
  chunk.reset? ? print(" [reset] ") : print(chunk.content)
end
puts "\n  answered by #{LlmFailover::Target.label(reply.provider, reply.model)}, failover: #{reply.failover?}"
show(chat)

puts "\n2. Both targets down: the turn fails, and the failed row is never sent again:"
primary.enqueue({ error: :unavailable })
backup.enqueue({ error: :overloaded })
begin
  chat.ask("And of Italy?")
rescue LlmFailover::Error => e
  puts "  #{e.class}: #{e.message}"
end
show(chat)

puts "\n3. Later, in another process: the record is loaded again and #complete answers that turn:"
primary.enqueue({ text: "Rome." })
reply = Chat.find(chat.id).complete
puts "  #{reply.content.inspect} (the provider saw #{primary.requests.last.json['messages'].size} messages)"
show(chat)

puts "\n4. The attempt log and its report:"
puts LlmFailover::Report.new.to_s.lines.map { |line| line.strip.empty? ? line : "  #{line}" }.join
primary.stop
backup.stop
FileUtils.remove_entry(dir)
