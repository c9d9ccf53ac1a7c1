# frozen_string_literal: true

require "spec_helper"

# One example per provider behaviour. :openai (OpenAI protocol) is the primary and
# :anthropic (Anthropic protocol) the backup, each on its own FakeProvider.
RSpec.describe "Retries and failover" do
  include_context "with fake providers"

  let(:backup_text) { "Answer from the backup" }

  before { backup.default = { text: backup_text } }

  def error_classes(reply_or_error)
    reply_or_error.attempts.map(&:error_class)
  end

  describe "rate limits" do
    it "honours Retry-After, then succeeds on the same target" do
      primary.enqueue({ error: :rate_limit, retry_after: 1 }, { text: "after the wait" })
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      reply = failover_chat.ask("Hi")
      elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started

      expect(reply.content).to eq("after the wait")
      expect(reply.provider).to eq(:openai)
      expect(reply.failover?).to be(false)
      expect(primary.request_count).to eq(2)
      expect(backup.request_count).to eq(0)
      expect(error_classes(reply)).to eq(["LlmFailover::RateLimitError", nil])
      expect(reply.attempts.first.retry_after).to eq(1.0)
      # Lower bounds only: the second request cannot have started before the asked delay.
      expect(reply.attempts[1].started_at - reply.attempts[0].started_at).to be >= 1.0
      expect(elapsed).to be >= 1.0
    end

    it "retries a persistent 429 max_retries times, then the backup answers" do
      primary.default = { error: :rate_limit }
      reply = failover_chat(max_retries: 2).ask("Hi")
      expect(primary.request_count).to eq(3)
      expect(backup.request_count).to eq(1)
      expect(reply.content).to eq(backup_text)
      expect(reply.provider).to eq(:anthropic)
      expect(reply.failover?).to be(true)
      expect(error_classes(reply)).to eq(["LlmFailover::RateLimitError"] * 3 + [nil])
    end

    it "fails over at once when Retry-After is longer than retry_max_interval" do
      primary.enqueue({ error: :rate_limit, retry_after: 60 })
      reply = failover_chat(retry_max_interval: 5).ask("Hi")
      expect(primary.request_count).to eq(1)
      expect(reply.provider).to eq(:anthropic)
      expect(reply.attempts.first.retry_after).to eq(60.0)
    end

    it "fails over without retrying when the account is out of money (ProviderQuotaError)" do
      primary.default = { error: :insufficient_quota }
      reply = failover_chat.ask("Hi")
      expect(primary.request_count).to eq(1)
      expect(reply.provider).to eq(:anthropic)
      expect(error_classes(reply)).to eq(["LlmFailover::ProviderQuotaError", nil])
    end
  end

  describe "server errors" do
    it "retries one 500 and answers from the primary" do
      primary.enqueue({ error: :server }, { text: "recovered" })
      reply = failover_chat.ask("Hi")
      expect(reply.content).to eq("recovered")
      expect(reply.attempts.size).to eq(2)
      expect(reply.failover?).to be(false)
      expect(backup.request_count).to eq(0)
      expect(reply.attempts.first.http_status).to eq(500)
    end

    it "retries a persistent 503, then fails over" do
      primary.default = { error: :unavailable }
      reply = failover_chat(max_retries: 1).ask("Hi")
      expect(primary.request_count).to eq(2)
      expect(backup.request_count).to eq(1)
      expect(reply.content).to eq(backup_text)
      expect(error_classes(reply)).to eq(["LlmFailover::ServiceUnavailableError"] * 2 + [nil])
    end

    it "rides out a primary that is down for a while (3 x 503, then healthy)" do
      primary.enqueue({ error: :unavailable }, { error: :unavailable }, { error: :unavailable }, { text: "back" })
      reply = failover_chat(max_retries: 3).ask("Hi")
      expect(reply.content).to eq("back")
      expect(reply.provider).to eq(:openai)
      expect(primary.request_count).to eq(4)
      expect(backup.request_count).to eq(0)
    end
  end

  describe "statuses the SDKs retry without naming them (408, 409, x-should-retry: true)" do
    # The README's recipe (`retry_on LlmFailover::RetryableError`) must retry them: each
    # is a RetryableError, on the error raised and on the attempt records.
    [[{ status: 408 }, "408"], [{ status: 409 }, "409"],
     [{ status: 418, headers: { "x-should-retry" => "true" } }, "418 with x-should-retry: true"]].each do |step, name|
      it "raises a RetryableError for #{name} once every target failed, after retrying it" do
        primary.default = step
        backup.default = step
        expect { failover_chat(max_retries: 1, retry_interval: 0).ask("Hi") }
          .to raise_error(LlmFailover::RetryableError) { |e|
            expect(e.retryable?).to be(true)
            expect(e.attempts.map(&:error_class).uniq).to eq(["LlmFailover::RetryableError"])
          }
        expect(primary.request_count).to eq(2)
        expect(backup.request_count).to eq(2)
      end
    end

    it "keeps a plain 418 a non-retryable LlmFailover::Error, raised at once" do
      primary.default = { status: 418 }
      expect { failover_chat.ask("Hi") }.to raise_error(LlmFailover::Error) { |e|
        expect(e).not_to be_a(LlmFailover::RetryableError)
        expect(e.retryable?).to be(false)
      }
      expect(backup.request_count).to eq(0)
    end
  end

  describe "which errors are retryable" do
    # One owner: the C core's verdict for each kind (lf_kind_retryable). The error classes
    # ask it, and it agrees with the hierarchy DESIGN.md fixes (RetryableError and below).
    it "is the core's rule, and every RetryableError and only those are retryable by default" do
      classes = LlmFailover.constants.map { |c| LlmFailover.const_get(c) }
                           .select { |c| c.is_a?(Class) && c <= LlmFailover::Error }
      expect(classes.size).to be > 15
      classes.each do |klass|
        expect(klass.retryable_by_default?).to eq(klass.ancestors.include?(LlmFailover::RetryableError)), klass.name
      end
      expect(LlmFailover::ProviderQuotaError.new("out of credit").retryable?).to be(false) # fails over, never retried
      expect(LlmFailover::ServerError.new("x", retryable: false).retryable?).to be(false) # the provider said so
    end
  end

  describe "connections and deadlines" do
    it "retries a connection reset before the headers" do
      primary.enqueue({ reset: true }, { text: "second try" })
      reply = failover_chat.ask("Hi")
      expect(reply.content).to eq("second try")
      expect(primary.request_count).to eq(2)
      expect(error_classes(reply)).to eq(["LlmFailover::ConnectionError", nil])
      expect(backup.request_count).to eq(0)
    end

    # libcurl would send the POST again by itself on a new connection: a second request
    # the provider may bill, with one attempt recorded and max_retries ignored.
    describe "a reused keep-alive connection that dies before any response" do
      before do
        curl = Gem::Version.new(LlmFailover::Engine.curl_version[%r{libcurl/([\d.]+)}, 1])
        skip "libcurl #{curl} has no CURLOPT_PREREQFUNCTION (7.80)" if curl < Gem::Version.new("7.80")
        primary.default = { text: "fine" }
        failover_chat.ask("opens the connection")
        @sent_before = primary.request_count
        primary.enqueue({ reset: true }) # the request is read, then the connection reset
      end

      it "is a recorded ConnectionError, sent again only by the call's own retry" do
        reply = failover_chat(max_retries: 1, retry_interval: 0).ask("Hi")
        expect(reply.content).to eq("fine")
        expect(primary.request_count - @sent_before).to eq(2)
        expect(error_classes(reply)).to eq(["LlmFailover::ConnectionError", nil])
        expect(reply.attempts.first.error_message).to match(/reused connection closed before any response/)
        expect(backup.request_count).to eq(0)
      end

      it "is not sent again with max_retries 0: the backup answers" do
        reply = failover_chat(max_retries: 0).ask("Hi")
        expect(primary.request_count - @sent_before).to eq(1)
        expect(error_classes(reply)).to eq(["LlmFailover::ConnectionError", nil])
        expect(reply.content).to eq(backup_text)
      end
    end

    # A load balancer resets (RST) keep-alive connections idle for 0.25 s; calls come
    # 0.4 s apart. The send on a reset connection fails before any byte leaves: the
    # provider never saw it, so libcurl's send on a new connection is the first.
    describe "keep-alive connections the server resets while idle" do
      let(:idle_resetting) { start_fake_provider(reset_idle_after: 0.25) }

      before do
        curl = Gem::Version.new(LlmFailover::Engine.curl_version[%r{libcurl/([\d.]+)}, 1])
        skip "libcurl #{curl} has no CURLOPT_PREREQFUNCTION (7.80)" if curl < Gem::Version.new("7.80")
        LlmFailover.configure do |c|
          c.provider :balanced, api: :openai, api_key: "sk-test-BALANCED", base_url: idle_resetting.base_url(:openai)
        end
      end

      def calls_apart(count, **options)
        Array.new(count) do |i|
          sleep 0.4 unless i.zero?
          LlmFailover.chat(model: "gpt-4o", provider: :balanced, **options).ask("call #{i}")
        end
      end

      it "answers every call with max_retries 0, each request sent once" do
        replies = calls_apart(6, max_retries: 0)
        expect(replies.map(&:content)).to all(eq(LlmFailover::Testing::FakeProvider::DEFAULT_TEXT))
        expect(idle_resetting.requests.map { |r| sent_messages(r).last[1] }).to eq((0..5).map { |i| "call #{i}" })
      end

      it "leaves no failed attempt record when retries are allowed" do
        replies = calls_apart(6, max_retries: 2, retry_interval: 0)
        expect(replies.flat_map(&:attempts).map { |a| [a.error_class, a.error_message] }).to all(eq([nil, nil]))
        expect(idle_resetting.request_count).to eq(6)
      end
    end

    it "fails over without retrying a provider that never answers" do
      primary.enqueue({ delay_headers: 3 })
      reply = failover_chat(first_token_timeout: 0.3, request_timeout: 0.6).ask("Hi")
      expect(primary.request_count).to eq(1)
      expect(reply.attempts.count { |a| a.provider == :openai }).to eq(1)
      expect(error_classes(reply).first).to eq("LlmFailover::TimeoutError")
      expect(reply.content).to eq(backup_text)
    end

    it "raises TimeoutError when the silent provider has no backup" do
      primary.enqueue({ delay_headers: 3 })
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, first_token_timeout: 0.3, request_timeout: 0.6)
      expect { chat.ask("Hi") }.to raise_error(LlmFailover::TimeoutError) { |e| expect(e.attempts.size).to eq(1) }
      expect(primary.request_count).to eq(1)
    end

    it "says which deadline passed, as the core reported it (not read out of the message)" do
      primary.enqueue({ text: "late answer", delay_first_token: 3 })
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, first_token_timeout: 0.3)
      expect { chat.ask("Hi") { |_| nil } }.to raise_error(LlmFailover::TimeoutError) { |e| expect(e.phase).to eq(:first_token) }
      primary.enqueue({ text: "one two three", stall_after: 1 })
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, idle_timeout: 0.3)
      expect { chat.ask("Hi") { |_| nil } }.to raise_error(LlmFailover::TimeoutError) { |e| expect(e.phase).to eq(:idle) }
      primary.enqueue({ delay_headers: 3 })
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, first_token_timeout: 5, request_timeout: 0.3)
      expect { chat.ask("Hi") }.to raise_error(LlmFailover::TimeoutError) { |e| expect(e.phase).to eq(:total) }
    end

    it "keeps the phase of the primary's timeout on the error the backup's failure raises (#cause)" do
      primary.enqueue({ delay_headers: 3 })
      backup.enqueue({ error: :unauthorized })
      expect { failover_chat(first_token_timeout: 0.3, request_timeout: 0.6).ask("Hi") { |_| nil } }
        .to raise_error(LlmFailover::UnauthorizedError) { |e| expect(e.cause.phase).to eq(:first_token) }
    end

    it "fails over when the first token is too slow" do
      primary.enqueue({ text: "late answer", delay_first_token: 3 })
      chunks, sink = collect_chunks
      reply = failover_chat(first_token_timeout: 0.3).ask("Hi", &sink)
      expect(primary.request_count).to eq(1)
      expect(error_classes(reply).first).to eq("LlmFailover::TimeoutError")
      expect(chunks.map(&:content).join).to eq(backup_text)
      expect(chunks.none?(&:reset?)).to be(true) # the primary never showed a word
      expect(chunks.map(&:provider).uniq).to eq([:anthropic])
    end

    it "waits for a slow first token inside the deadline" do
      primary.enqueue({ text: "slow but fine", delay_first_token: 0.3 })
      reply = failover_chat(first_token_timeout: 3).ask("Hi") { |_| nil }
      expect(reply.content).to eq("slow but fine")
      expect(reply.attempts.size).to eq(1)
      expect(backup.request_count).to eq(0)
    end
  end

  describe "broken streams" do
    it "resets a stream cut mid-answer and stores only the backup's answer" do
      primary.enqueue({ text: "primary words that never end", cut_after: 2 })
      chunks, sink = collect_chunks
      chat = failover_chat
      reply = chat.ask("Hi", &sink)

      reset_at = chunks.index(&:reset?)
      expect(reset_at).to eq(2)
      expect(chunks[0, 2].map(&:content)).to eq(["primary ", "words "])
      expect(chunks[reset_at].content).to eq("")
      expect(chunks[reset_at].provider).to eq(:anthropic)
      expect(chunks[(reset_at + 1)..].map(&:content).join).to eq(backup_text)
      expect(chunks[(reset_at + 1)..].map(&:provider).uniq).to eq([:anthropic])
      expect(reply.content).to eq(backup_text)
      expect(primary.request_count).to eq(1) # words were shown: never retried
      expect(error_classes(reply).first).to eq("LlmFailover::StreamInterruptedError")

      stored = chat.messages.last
      expect(stored.content).to eq(backup_text)
      expect(stored.content).not_to include("primary")
      expect([stored.model, stored.provider, stored.status]).to eq(["claude-sonnet-4-6", "anthropic", "complete"])
    end

    it "empties the stored message before the backup's first chunk reaches it" do
      store = SpecListStore.new
      primary.enqueue({ chunks: %w[a b c], cut_after: 2 })
      backup.enqueue({ chunks: %w[X Y] })
      failover_chat(store: store).ask("Hi") { |_| nil }
      expect(store.log).to eq([[:start, "openai"], [:append, "a"], [:append, "b"], [:reset, "anthropic"],
                               [:append, "X"], [:append, "Y"], [:finish, "anthropic"]])
    end

    it "never sends the backup the primary's partial answer as a prefill" do
      primary.enqueue({ text: "partial answer here", cut_after: 1 })
      failover_chat.ask("What is up?") { |_| nil }
      sent = sent_messages(backup.requests.last)
      expect(sent).to eq([["user", "What is up?"]])
      expect(sent.map(&:first)).not_to include("assistant")
    end

    it "fails over from a stream that stalls (idle timeout)" do
      primary.enqueue({ text: "one two three", stall_after: 1 })
      chunks, sink = collect_chunks
      reply = failover_chat(idle_timeout: 0.3).ask("Hi", &sink)
      expect(primary.request_count).to eq(1)
      expect(error_classes(reply).first).to eq("LlmFailover::TimeoutError")
      expect(chunks.map(&:content).first).to eq("one ")
      expect(chunks.count(&:reset?)).to eq(1)
      expect(reply.content).to eq(backup_text)
    end

    it "treats a malformed event inside a stream as a broken answer and fails over" do
      primary.enqueue({ text: "good then garbage", malformed_after: 1 })
      chunks, sink = collect_chunks
      chat = failover_chat
      reply = chat.ask("Hi", &sink)
      expect(error_classes(reply).first).to eq("LlmFailover::InvalidResponseError")
      expect(chunks.count(&:reset?)).to eq(1)
      expect(reply.content).to eq(backup_text)
      expect(chat.messages.last.content).to eq(backup_text)
    end

    it "accepts a stream without [DONE] that carries finish_reason and usage" do
      primary.enqueue({ text: "complete answer", no_done: true, usage: { input: 4, output: 2 } })
      reply = failover_chat.ask("Hi") { |_| nil }
      expect(reply.content).to eq("complete answer")
      expect(reply.attempts.size).to eq(1)
      expect([reply.input_tokens, reply.output_tokens]).to eq([4, 2])
      expect(reply.finish_reason).to eq("stop")
      expect(backup.request_count).to eq(0)
    end

    it "raises StreamInterruptedError with the partial text when there is no backup" do
      primary.enqueue({ text: "half an answer", cut_after: 1 })
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      expect { chat.ask("Hi") { |_| nil } }.to raise_error(LlmFailover::StreamInterruptedError) { |e|
        expect(e.partial_content).to eq("half ")
      }
      expect(primary.request_count).to eq(1)
      expect(chat.messages.last.status).to eq("failed")
    end
  end

  describe "requests a backup cannot fix" do
    # A POST carries the API key: following a redirect would send it to whatever host the
    # Location names. A moved base_url is configuration drift, as the README's table says.
    [301, 302, 307, 308].each do |status|
      it "raises a #{status} at once without following it or failing over" do
        elsewhere = start_fake_provider
        primary.enqueue({ status: status, headers: { "location" => "#{elsewhere.base_url(:openai)}/chat/completions" },
                          body: "moved" })
        expect { failover_chat(max_retries: 2).ask("Hi") }.to raise_error(LlmFailover::Error) { |e|
          expect([e.class, e.status, e.retryable?]).to eq([LlmFailover::Error, status, false])
        }
        expect([primary.request_count, elsewhere.request_count, backup.request_count]).to eq([1, 0, 0])
      end
    end

    it "raises ContextLengthExceededError and leaves the backup untouched" do
      primary.enqueue({ error: :context_length })
      expect { failover_chat.ask("Hi") }.to raise_error(LlmFailover::ContextLengthExceededError)
      expect(primary.request_count).to eq(1)
      expect(backup.request_count).to eq(0)
    end

    it "fails over on context length with failover_on_context_length: true" do
      primary.enqueue({ error: :context_length })
      reply = failover_chat(failover_on_context_length: true).ask("Hi")
      expect(reply.content).to eq(backup_text)
      expect(primary.request_count).to eq(1)
      expect(error_classes(reply)).to eq(["LlmFailover::ContextLengthExceededError", nil])
    end

    it "raises on a content-policy rejection without failing over" do
      primary.enqueue({ error: :content_policy })
      expect { failover_chat.ask("Hi") }.to raise_error(LlmFailover::ContentPolicyError)
      expect(backup.request_count).to eq(0)
    end

    it "never hides a 401 behind the backup" do
      primary.default = { error: :unauthorized }
      expect { failover_chat.ask("Hi") }.to raise_error(LlmFailover::UnauthorizedError) { |e|
        expect(e.status).to eq(401)
        expect(e.provider).to eq(:openai)
        expect(e.attempts.size).to eq(1)
      }
      expect(primary.request_count).to eq(1)
      expect(backup.request_count).to eq(0)
    end

    it "never fails over a 400" do
      primary.default = { error: :bad_request }
      expect { failover_chat.ask("Hi") }.to raise_error(LlmFailover::BadRequestError)
      expect(primary.request_count).to eq(1)
      expect(backup.request_count).to eq(0)
    end
  end

  describe "accounting" do
    it "reports the backup's model, provider and tokens, with every attempt in order" do
      primary.default = { error: :server }
      backup.enqueue({ text: "from claude", model: "claude-sonnet-4-6-20260101", usage: { input: 7, output: 3 } })
      reply = failover_chat(max_retries: 1).ask("Hi")

      expect([reply.model, reply.response_model, reply.provider, reply.input_tokens, reply.output_tokens])
        .to eq(["claude-sonnet-4-6", "claude-sonnet-4-6-20260101", :anthropic, 7, 3])
      expect(reply.attempts.map(&:attempt)).to eq([1, 2, 3])
      expect(reply.attempts.map(&:provider)).to eq(%i[openai openai anthropic])
      expect(reply.attempts.map(&:model)).to eq(["gpt-4o", "gpt-4o", "claude-sonnet-4-6"])
      expect(reply.attempts.map(&:success?)).to eq([false, false, true])
      expect(reply.attempts.map(&:request_id).uniq).to eq([reply.request_id])
      expect(reply.attempts.last.input_tokens).to eq(7)
    end

    it "keeps the tokens of a failed attempt when the provider reported them" do
      LlmFailover.configure do |c|
        c.provider :claude_primary, api: :anthropic, api_key: "sk-ant-OTHER", base_url: primary.base_url(:anthropic)
      end
      primary.enqueue({ text: "one two three four", error_event_after: 2, usage: { input: 11, output: 4 } })
      backup.enqueue({ text: "fine", usage: { input: 12, output: 1 } })
      chat = LlmFailover.chat(model: "claude-opus", provider: :claude_primary,
                              backup_model: "claude-sonnet-4-6", backup_provider: :anthropic)
      reply = chat.ask("Hi") { |_| nil }
      failed = reply.attempts.first
      expect(failed.success?).to be(false)
      expect(failed.error_class).to eq("LlmFailover::OverloadedError")
      expect(failed.input_tokens).to eq(11)
      expect(reply.input_tokens).to eq(12)
    end

    it "raises the backup's error with the primary's reachable through #attempts and #cause" do
      primary.default = { error: :unavailable }
      backup.default = { error: :overloaded }
      error = nil
      begin
        failover_chat(max_retries: 0).ask("Hi")
      rescue LlmFailover::Error => e
        error = e
      end
      expect(error).to be_a(LlmFailover::OverloadedError)
      expect(error.provider).to eq(:anthropic)
      expect(error.model).to eq("claude-sonnet-4-6")
      expect(error.attempts.map(&:error_class))
        .to eq(%w[LlmFailover::ServiceUnavailableError LlmFailover::OverloadedError])
      expect(error.attempts.map(&:request_id).uniq).to eq([error.request_id])
      expect(error.cause).to be_a(LlmFailover::ServiceUnavailableError)
      expect(error.cause.provider).to eq(:openai)
      expect(error.cause.status).to eq(503)
    end
  end

  describe "the quota" do
    it "asks the backup first when the primary's quota is used up" do
      reply = failover_chat(quota: 100, quota_used: 100).ask("Hi")
      expect(primary.request_count).to eq(0)
      expect(reply.provider).to eq(:anthropic)
      expect(reply.failover?).to be(false)
      expect(reply.attempts.size).to eq(1)
    end

    it "treats a quota of 0 as unlimited" do
      reply = failover_chat(quota: 0, quota_used: 1_000_000).ask("Hi")
      expect(reply.provider).to eq(:openai)
      expect(backup.request_count).to eq(0)
    end

    it "still calls the primary when it is over quota and has no backup" do
      reply = LlmFailover.chat(model: "gpt-4o", provider: :openai, quota: 10, quota_used: 11).ask("Hi")
      expect(reply.provider).to eq(:openai)
    end

    it "raises QuotaExceededError with enforce_quota and no backup, before any request" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, quota: 10, quota_used: 10, enforce_quota: true)
      expect { chat.ask("Hi") }.to raise_error(LlmFailover::QuotaExceededError, /openai.*gpt-4o.*used 10 of 10/)
      expect(primary.request_count).to eq(0)
      # The core's attempt loop refused it: no assistant message was started.
      expect(chat.messages.map(&:role)).to eq(%w[user])
    end

    it "calls quota_used once per call" do
      calls = 0
      chat = failover_chat(quota: 100, quota_used: -> { calls += 1 })
      chat.ask("one")
      chat.ask("two")
      expect(calls).to eq(2)
    end
  end

  describe "the stored conversation" do
    it "stores the user message exactly once over retries and failover" do
      primary.default = { error: :server }
      chat = failover_chat(max_retries: 2)
      chat.ask("Only once")
      expect(chat.messages.map(&:role)).to eq(%w[user assistant])
      (primary.requests + backup.requests).each do |request|
        expect(sent_messages(request)).to eq([["user", "Only once"]])
      end
    end

    it "answers the same turn with #complete after a failed #ask" do
      primary.enqueue({ error: :unauthorized }, { text: "second time lucky" })
      chat = failover_chat
      expect { chat.ask("Hello?") }.to raise_error(LlmFailover::UnauthorizedError)
      expect(chat.messages.map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant failed]])
      failed = chat.messages.last

      reply = chat.complete
      expect(reply.content).to eq("second time lucky")
      expect(sent_messages(primary.requests.last)).to eq([%w[user Hello?]])
      expect(chat.messages.count { |m| m.role == "user" }).to eq(1)
      # One turn, one answer: the failed message became it (issue 27, item 6).
      expect(chat.messages.map(&:status)).to eq(%w[complete complete])
      expect(chat.messages.last).to equal(failed)
    end

    it "marks the answer failed when a Timeout interrupts the call" do
      require "timeout"
      primary.enqueue({ delay_headers: 3 })
      chat = failover_chat
      expect { Timeout.timeout(0.3) { chat.ask("Hi") } }.to raise_error(Timeout::Error)
      expect(chat.messages.map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant failed]])
      expect(backup.request_count).to eq(0)
    end

    it "marks the answer failed when the block raises, and propagates the error" do
      primary.enqueue({ chunks: %w[a b c] })
      chat = failover_chat
      expect { chat.ask("Hi") { |_| raise "stop" } }.to raise_error(RuntimeError, "stop")
      expect(chat.messages.last.status).to eq("failed")
      expect(backup.request_count).to eq(0)
    end
  end
end
