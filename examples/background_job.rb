# frozen_string_literal: true

# A background job that summarizes support tickets, written the Sidekiq way
# (`perform(id)`); the same body fits an ActiveJob `perform`. Plain Ruby, so it runs
# standalone against two local FakeProviders:
#
#   bundle exec ruby examples/background_job.rb
#
# What it shows: a daily token quota that moves the feature to the cheaper backup
# before any network call, a usage sink that counts every billed token (failed
# attempts too), and the job's retry decision: re-raise what a later try may fix,
# record and drop what it cannot.
#
# In an app, configure once (config/initializers/llm_failover.rb):
#
#   LlmFailover.configure do |c|
#     c.provider :openai,    api: :openai,    api_key: ENV.fetch("OPENAI_API_KEY")
#     c.provider :anthropic, api: :anthropic, api_key: ENV.fetch("ANTHROPIC_API_KEY")
#     c.usage_log = TokenUsage
#   end
require "date"
require "llm_failover"

# Tokens spent per feature and day. A usage sink: the gem calls #record with every
# AttemptRecord. In an app this would be a table or a Redis counter.
module TokenUsage
  @totals = Hash.new(0)
  @lock = Mutex.new

  def self.record(attempt)
    tokens = attempt.input_tokens.to_i + attempt.output_tokens.to_i
    @lock.synchronize { @totals[[attempt.feature, Date.today]] += tokens }
  end

  def self.today(feature)
    @lock.synchronize { @totals[[feature, Date.today]] }
  end
end

# Stands in for an ActiveRecord model.
Ticket = Struct.new(:id, :body, :summary, :summarized_by, :summary_error, keyword_init: true) do
  def self.all
    @all ||= {}
  end

  def self.create(**attrs)
    all[attrs[:id]] = new(**attrs)
  end

  def self.find(id)
    all.fetch(id)
  end

  def update(**attrs)
    attrs.each { |k, v| self[k] = v }
  end
end

class TicketSummaryJob
  # include Sidekiq::Job
  FEATURE = "ticket_summary"
  # Tokens a day the feature may spend before it moves to the backup model. 0 would mean
  # unlimited, not "stop".
  DAILY_TOKEN_QUOTA = 150

  def perform(ticket_id)
    ticket = Ticket.find(ticket_id)
    chat = LlmFailover.chat(model: "gpt-4o-mini", provider: :openai,
                            backup_model: "claude-haiku-4-5", backup_provider: :anthropic,
                            quota: DAILY_TOKEN_QUOTA, quota_used: -> { TokenUsage.today(FEATURE) },
                            feature: FEATURE, max_retries: 2)
    chat.with_instructions("Summarize the support ticket in one sentence.")
    reply = chat.ask(ticket.body)
    by = LlmFailover::Target.label(reply.provider, reply.model)
    ticket.update(summary: reply.content, summarized_by: by, summary_error: nil)
    reply
  rescue LlmFailover::Error => e
    # Every target failed on errors that time may fix (overload, outage): let the job
    # system retry later, with its own backoff.
    raise if e.retryable?

    # A bad request or a wrong key fails the same way every time: record it, don't retry.
    ticket.update(summary_error: "#{e.class}: #{e.message}")
    nil
  end
end

if $PROGRAM_NAME == __FILE__
  require "llm_failover/testing"

  openai = LlmFailover::Testing::FakeProvider.start
  anthropic = LlmFailover::Testing::FakeProvider.start
  LlmFailover.configure do |c|
    c.provider :openai, api: :openai, api_key: "fake-key", base_url: openai.base_url(:openai)
    c.provider :anthropic, api: :anthropic, api_key: "fake-key", base_url: anthropic.base_url(:anthropic)
    c.retry_interval = 0.01 # the fakes fail fast; so may the retries
    c.usage_log = TokenUsage
  end

  Ticket.create(id: 1, body: "The printer on floor 3 jams on every duplex job since Monday.")
  Ticket.create(id: 2, body: "I was charged twice for the March invoice.")
  Ticket.create(id: 3, body: "Please add dark mode to the mobile app.")
  Ticket.create(id: 4, body: "The export to CSV times out for large projects.")
  Ticket.create(id: 5, body: "x" * 50)

  usage = { input: 60, output: 20 }
  openai.enqueue({ text: "Duplex printing jams the floor 3 printer.", usage: usage },
                 { error: :server }, { error: :server }, { error: :server }) # ticket 2: down, 3 tries
  anthropic.enqueue({ text: "The customer was billed twice for March.", usage: usage },
                    # ticket 3: the quota is used up, so the backup is asked first (and only)
                    { text: "The customer asks for a dark mode on mobile.", usage: usage },
                    { error: :overloaded }, { error: :overloaded }, { error: :overloaded }, # ticket 4
                    { error: :bad_request }) # ticket 5

  (1..5).each do |id|
    used = "#{TokenUsage.today(TicketSummaryJob::FEATURE)}/#{TicketSummaryJob::DAILY_TOKEN_QUOTA} tokens used"
    reply = TicketSummaryJob.new.perform(id)
    ticket = Ticket.find(id)
    if reply
      puts "ticket #{id} (#{used}): #{ticket.summary.inspect} by #{ticket.summarized_by}, " \
           "#{reply.attempts.size} attempt(s)#{', failover' if reply.failover?}"
    else
      puts "ticket #{id} (#{used}): not retried: #{ticket.summary_error}"
    end
  rescue LlmFailover::Error => e
    puts "ticket #{id} (#{used}): job raised #{e.class}; the job system retries it later"
  end
  puts "openai saw #{openai.request_count} requests, anthropic #{anthropic.request_count}"
  [openai, anthropic].each(&:stop)
end
