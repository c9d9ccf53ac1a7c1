# frozen_string_literal: true

require "spec_helper"

RSpec.describe LlmFailover::Quota do
  def quota(limit:, used:)
    described_class.new(limit: limit, used: used)
  end

  describe "an unlimited quota (limit 0 or nil)" do
    [0, nil, 0.0].each do |limit|
      it "never stops a call with limit #{limit.inspect}" do
        q = quota(limit: limit, used: 1_000_000)
        expect(q).to be_unlimited
        expect(q).not_to be_exceeded
        expect(q.remaining).to eq(Float::INFINITY)
        expect(q.percent_used).to eq(0)
        expect(q.limit).to eq(limit)
      end
    end
  end

  describe "a limited quota" do
    it "answers from limit and used" do
      q = quota(limit: 1000, used: 250)
      expect(q).not_to be_unlimited
      expect(q).not_to be_exceeded
      expect(q.remaining).to eq(750)
      expect(q.percent_used).to eq(25)
    end

    it "is exceeded once used reaches the limit" do
      expect(quota(limit: 100, used: 99)).not_to be_exceeded
      expect(quota(limit: 100, used: 99.5).remaining).to eq(0.5)
      expect(quota(limit: 100, used: 100)).to be_exceeded
      expect(quota(limit: 100, used: 100).remaining).to eq(0)
    end

    it "never has a negative remainder, and reports overspending in percent_used" do
      q = quota(limit: 100, used: 150)
      expect(q).to be_exceeded
      expect(q.remaining).to eq(0)
      expect(q.percent_used).to eq(150)
    end

    it "works with fractional budgets and Rationals" do
      expect(quota(limit: 0.5, used: 0.25).percent_used).to eq(50)
      expect(quota(limit: Rational(1, 2), used: Rational(1, 2))).to be_exceeded
    end

    it "keeps limit and used as given" do
      q = quota(limit: 1000, used: 250)
      expect(q.limit).to be(1000)
      expect(q.used).to be(250)
    end
  end

  describe "validation" do
    it "rejects a negative limit or used" do
      expect { quota(limit: -1, used: 0) }.to raise_error(LlmFailover::ConfigurationError, /limit/)
      expect { quota(limit: 10, used: -0.5) }.to raise_error(LlmFailover::ConfigurationError, /used/)
    end

    it "rejects values that are not numbers" do
      ["10", :ten, true, Object.new, Complex(1, 1)].each do |bad|
        expect { quota(limit: bad, used: 0) }.to raise_error(LlmFailover::ConfigurationError, /limit/)
        expect { quota(limit: 10, used: bad) }.to raise_error(LlmFailover::ConfigurationError, /used/)
      end
      expect { quota(limit: 10, used: nil) }.to raise_error(LlmFailover::ConfigurationError, /used/)
    end

    it "rejects NaN and infinity" do
      expect { quota(limit: Float::NAN, used: 0) }.to raise_error(LlmFailover::ConfigurationError)
      expect { quota(limit: 10, used: Float::INFINITY) }.to raise_error(LlmFailover::ConfigurationError)
    end

    it "requires both keywords" do
      expect { described_class.new(limit: 10) }.to raise_error(ArgumentError, /used/)
    end

    it "does not expose its C setter" do
      expect { quota(limit: 10, used: 1).__set(0, 0) }.to raise_error(NoMethodError)
    end
  end

  it "has a readable inspect" do
    expect(quota(limit: 1000, used: 250).inspect)
      .to eq("#<LlmFailover::Quota limit=1000 used=250 remaining=750.0 percent_used=25.0>")
    expect(quota(limit: nil, used: 3).inspect).to eq("#<LlmFailover::Quota unlimited (limit=nil) used=3>")
  end

  it "copies with dup and clone" do
    q = quota(limit: 10, used: 10)
    [q.dup, q.clone].each do |copy|
      expect(copy).to be_exceeded
      expect(copy.limit).to eq(10)
      expect(copy.used).to eq(10)
    end
  end

  it "keeps its values across GC compaction" do
    skip "GC.compact is not supported here" unless GC.respond_to?(:verify_compaction_references)

    # Heap-allocated values (a Bignum, a Rational) are what compaction can move.
    quotas = Array.new(50) { |i| quota(limit: (2**70) + i, used: Rational(i, 3)) }
    SpecGC.compact_everything
    quotas.each_with_index do |q, i|
      expect(q.limit).to eq((2**70) + i)
      expect(q.used).to eq(Rational(i, 3))
      expect(q).not_to be_exceeded
    end
  end
end
